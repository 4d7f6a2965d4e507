import { z } from 'zod';
import { PlatformError, badRequest } from '../../../core/errors';
import { newId } from '../../../core/ids';
import type { OperationContext, OperationEngine } from '../../../core/operations/engine';
import { type Principal, requireScope, requireWriter } from '../../../core/principal';
import { type GovernedTool, toolNamed } from './mcp-tools';
import { DEFAULT_APPROVAL_TTL_S } from './catalog';
import { actionOperationId, approvalHash } from './ids';
import type { ApprovalDoc, AuditDoc, WorkflowModels } from './model';
import type { AssetsService } from '../storage';

/** `/automation` shows this many recent audits. */
export const RECENT_AUDITS = 50;
/** The operation type an approved tool call runs as (registered in the module's `executors`). */
export const OP_AUTOMATION_ACTION = 'assets.automation_action';

export interface GovernedToolDeps {
  models: WorkflowModels;
  assets: AssetsService;
  engine: OperationEngine;
  reader(p: Principal | null | undefined): Principal;
  /** Records a pending approval with its agent action (the approvals' one way in). */
  insertApproval(doc: ApprovalDoc, summary: string): Promise<void>;
}

/**
 * Governed tool calls (the MCP endpoint): a read-only tool is performed now, any other becomes an
 * approval performed once approved; every call leaves an audit.
 */
export class GovernedToolCalls {
  constructor(private readonly d: GovernedToolDeps) {}

  /** Performs an approved automation tool call (once: the operation's step records its result). */
  async executeAction(ctx: OperationContext): Promise<unknown> {
    const { approvalId } = ctx.op.input as { approvalId: string };
    const a = await this.d.models.Approval.findById(approvalId).lean<ApprovalDoc>().exec();
    if (!a || a.status !== 'approved' || !a.tool) return { skipped: true };
    const t = toolNamed(a.tool.name);
    if (!t) throw badRequest('assets.unknown_tool', `unknown tool ${a.tool.name}`);
    return ctx.step('perform', () => t.perform(this.d.assets, a.actor, parseArgs(t, a.tool!.args)));
  }

  /**
   * One governed tool call (the MCP endpoint calls this): the key must hold the tool's scope; a
   * read-only tool is performed now, any other becomes an approval. Every call leaves an audit.
   */
  async callTool(
    p: Principal,
    t: GovernedTool,
    args: Record<string, unknown>,
  ): Promise<{ outcome: 'allowed' | 'approval_required'; result?: unknown; approval?: ApprovalDoc }> {
    const audit = (outcome: AuditDoc['outcome'], errorCode: string | null, approvalId: string | null = null) =>
      this.d.models.Audit.create({
        _id: newId(),
        accountId: p.accountId,
        keyId: p.keyId,
        tool: t.name,
        scope: t.scope,
        outcome,
        errorCode,
        approvalId,
        createdAt: new Date(),
      });
    try {
      // The tool's declared scope, nothing wider; a tool that changes things also needs a writer key.
      if (t.readOnly) requireScope(p, t.scope);
      else requireWriter(requireScope(p, t.scope));
    } catch (e) {
      await audit('refused', e instanceof PlatformError ? e.code : 'forbidden');
      throw e;
    }
    if (t.readOnly) {
      try {
        const result = await t.perform(this.d.assets, p, args as never);
        await audit('allowed', null);
        return { outcome: 'allowed', result };
      } catch (e) {
        await audit('failed', e instanceof PlatformError ? e.code : 'internal_error');
        throw e;
      }
    }
    const now = new Date();
    const id = newId();
    const actionKey = `assets.${t.name}`;
    const approval: ApprovalDoc = {
      _id: id,
      accountId: p.accountId,
      kind: 'automation_tool',
      actionKey,
      actionHash: approvalHash([id, actionKey, args]),
      title: `${t.title} (automation)`,
      status: 'pending',
      projectId: null,
      runId: null,
      stepId: null,
      tool: { name: t.name, args, scope: t.scope },
      requestedBy: { type: 'api_key', id: p.keyId },
      actor: p,
      expiresAt: new Date(now.getTime() + DEFAULT_APPROVAL_TTL_S * 1000),
      decidedAt: null,
      decidedBy: null,
      note: null,
      operationId: null,
      outbox: [],
      createdAt: now,
      updatedAt: now,
    };
    await this.d.insertApproval(
      approval,
      `Governed tool ${t.name} (scope ${t.scope}) with arguments ${Object.keys(args).sort().join(', ') || 'none'}`,
    );
    await audit('approval_required', null, id);
    return { outcome: 'approval_required', approval };
  }

  /**
   * An approved tool call is performed as an operation with an id fixed by the approval (a repeated
   * decision enqueues nothing new); the approval then names it. A rejected one does nothing.
   */
  async continueAfter(a: ApprovalDoc): Promise<ApprovalDoc> {
    const now = new Date();
    if (a.status !== 'approved') return a;
    const opId = actionOperationId(a._id);
    await this.d.engine.enqueue({
      id: opId,
      accountId: a.accountId,
      projectId: a.projectId ?? a.accountId,
      resourceType: 'asset_automation_action',
      resourceId: a._id,
      operationType: OP_AUTOMATION_ACTION,
      input: { approvalId: a._id },
      initiator: { type: 'approval', id: a._id, decided_by: a.decidedBy },
    });
    if (a.operationId === opId) return a;
    return (
      (await this.d.models.Approval.findOneAndUpdate(
        { _id: a._id },
        { $set: { operationId: opId, updatedAt: now } },
        { new: true },
      )
        .lean<ApprovalDoc>()
        .exec()) ?? a
    );
  }

  async recentAudits(p: Principal | null): Promise<AuditDoc[]> {
    const { accountId } = this.d.reader(p);
    return this.d.models.Audit.find({ accountId }).sort({ createdAt: -1 }).limit(RECENT_AUDITS).lean<AuditDoc[]>().exec();
  }
}

function parseArgs(t: GovernedTool, args: Record<string, unknown>) {
  return z.object(t.input).strict().parse(args) as never;
}
