import type { AgentActionOperationLink, AgentActionsPort, DecidedAgentAction } from '../../../core/agent-actions';
import { PlatformError, badRequest, conflict, notFound } from '../../../core/errors';
import type { EventBus } from '../../../core/events/event-bus';
import { OutboxRelay } from '../../../core/events/outbox';
import { newId } from '../../../core/ids';
import type { Logger } from '../../../core/logger';
import { isDuplicateKey } from '../../../core/mongo';
import type { OperationContext, OperationEngine } from '../../../core/operations/engine';
import type { OperationEvent } from '../../../core/operations/store';
import type { Ports } from '../../../core/ports';
import type { Principal } from '../../../core/principal';
import { SCOPES, type AssetsService } from '../service';
import { moveAsset, tagAsset, transformAsset } from './actions';
import { DEFAULT_APPROVAL_TTL_S, type StepDef, type StepType, STEP_CONFIGS } from './catalog';
import { approvalEventEntry } from './activity';
import { GovernedToolCalls } from './automation';
import { WorkflowDefinitions } from './definitions';
import { type Page, pageOf } from './paging';
import { actionOperationId, approvalHash, runOperationId, stepApprovalId } from './ids';
import { decisionRefusal, type Requester } from '../../../core/decision-rights';
import {
  type ApprovalDoc,
  type AuditDoc,
  type RunDoc,
  type RunStepDoc,
  TERMINAL_RUN,
  type WorkflowDoc,
  type WorkflowModels,
  type WorkflowVersionDoc,
} from './model';
import type { GovernedTool } from '../mcp/tools';

/** Operation types this file's executors run (registered in the area's `executors`). */
export const OP_WORKFLOW_RUN = 'assets.workflow_run';
export const OP_AUTOMATION_ACTION = 'assets.automation_action';
/** How an approval is shown in agent activity: a run's gate moves work on; a tool call changes assets. */
const APPROVAL_RISK: Record<ApprovalDoc['kind'], 'low' | 'medium' | 'high'> = {
  workflow_step: 'medium',
  automation_tool: 'medium',
};
/** How often pending approvals past their expiry are expired (and their runs failed): 30 s. */
export const APPROVAL_SWEEP_MS = 30_000;
export { RECENT_AUDITS } from './automation';
export { DEFAULT_PAGE, MAX_PAGE, type Page } from './paging';

const workflowNotFound = () => notFound('assets.workflow_not_found', 'workflow not found');
const runNotFound = () => notFound('assets.workflow_run_not_found', 'workflow run not found');
const approvalNotFound = () => notFound('assets.approval_not_found', 'approval not found');

export interface WorkflowDeps {
  models: WorkflowModels;
  assets: AssetsService;
  engine: OperationEngine;
  bus: EventBus;
  ports: Ports;
  log: Logger;
  /** Physical name of `<prefix>.assets.workflows` (notify steps publish there). */
  notifyTopic(): string;
  /** The REST base (`{base_url}`) at call time: hook URLs are absolute. */
  baseUrl(): string;
  /** Physical name of `<prefix>.assets.approvals` (the approvals' activity source). */
  approvalsTopic(): string;
}

/** The rules of workflows, their runs and approvals, and the audit of governed tool calls. */
export class WorkflowService {
  /** Publishes the approvals' outbox (started where the area's workers run). */
  readonly relay: OutboxRelay;

  private readonly definitions: WorkflowDefinitions;
  private readonly automation: GovernedToolCalls;

  constructor(readonly d: WorkflowDeps) {
    this.definitions = new WorkflowDefinitions({
      models: d.models,
      ports: d.ports,
      baseUrl: d.baseUrl,
      reader: (p) => this.reader(p),
      writer: (p) => this.writer(p),
    });
    this.automation = new GovernedToolCalls({
      models: d.models,
      assets: d.assets,
      reader: (p) => this.reader(p),
      insertApproval: (doc, summary) => this.insertApproval(doc, summary),
    });
    // Decisions nudge it at once; the idle scan is for other processes' writes (as the engine's).
    this.relay = new OutboxRelay({ models: [d.models.Approval], bus: d.bus, intervalMs: 1_000 });
  }

  private event(a: ApprovalDoc, status: ApprovalDoc['status'], at: Date) {
    return approvalEventEntry(this.d.approvalsTopic(), a, status, at);
  }

  private get m() {
    return this.d.models;
  }
  private reader(p: Principal | null | undefined) {
    return this.d.assets.reader(p);
  }
  private writer(p: Principal | null | undefined) {
    return this.d.assets.writer(p, SCOPES.write);
  }

  // ---- workflows and versions (definitions.ts) -----------------------------------------------

  list(p: Principal | null, limit?: number, cursor?: string): Promise<Page<WorkflowDoc>> {
    return this.definitions.list(p, limit, cursor);
  }
  get(p: Principal | null, id: string): Promise<WorkflowDoc> {
    return this.definitions.get(p, id);
  }
  create(p: Principal | null, input: { name: string; projectId?: string | null; draft?: unknown }): Promise<WorkflowDoc> {
    return this.definitions.create(p, input);
  }
  saveDraft(p: Principal | null, id: string, ifMatch: string | null | undefined, draft: unknown): Promise<WorkflowDoc> {
    return this.definitions.saveDraft(p, id, ifMatch, draft);
  }
  validate(p: Principal | null, id: string): Promise<{ valid: boolean; errors: { path: string; message: string }[] }> {
    return this.definitions.validate(p, id);
  }
  publish(p: Principal | null, id: string): Promise<WorkflowVersionDoc> {
    return this.definitions.publish(p, id);
  }
  versions(p: Principal | null, id: string): Promise<WorkflowVersionDoc[]> {
    return this.definitions.versions(p, id);
  }
  activate(p: Principal | null, id: string, version?: number | null): Promise<{ workflow: WorkflowDoc; secret: string | null }> {
    return this.definitions.activate(p, id, version);
  }
  hookUrl(wf: WorkflowDoc): string | null {
    return this.definitions.hookUrl(wf);
  }

  // ---- runs ----------------------------------------------------------------------------------

  /** Starts a run of the active version (or `version`); 409 when the workflow has nothing to run. */
  async run(
    p: Principal | null,
    id: string,
    input: { assetId?: string | null; version?: number | null; payload?: Record<string, unknown> },
  ): Promise<RunDoc> {
    const actor = this.writer(p);
    const wf = await this.get(p, id);
    return this.startRun(wf, actor, input, { type: 'manual', keyId: actor.keyId, deliveryId: null });
  }

  async startRun(
    wf: WorkflowDoc,
    actor: Principal,
    input: { assetId?: string | null; version?: number | null; payload?: Record<string, unknown> },
    trigger: RunDoc['trigger'],
    /** Fixed by the caller when a repeat must be refused (a hook delivery id): 409 on a second start. */
    fixedRunId?: string,
  ): Promise<RunDoc> {
    const versionNo = input.version ?? wf.activeVersion;
    if (!versionNo) throw conflict('assets.workflow_not_active', 'activate the workflow (or name a published version) to run it');
    const v = await this.definitions.version(wf, versionNo);
    const needsAsset = v.definition.steps.some((s) => s.type !== 'notify' && s.type !== 'wait_for_approval');
    if (needsAsset && !input.assetId) throw badRequest('validation_failed', 'asset_id is required by this workflow');
    // The asset must be visible to the actor now (404 otherwise), not only when a step reaches it.
    if (input.assetId) await this.d.assets.get(actor, input.assetId);
    const now = new Date();
    const runId = fixedRunId ?? newId();
    const run: RunDoc = {
      _id: runId,
      accountId: wf.accountId,
      workflowId: wf._id,
      projectId: wf.projectId,
      version: v.version,
      trigger,
      input: { asset_id: input.assetId ?? null, ...(input.payload ? { payload: input.payload } : {}) },
      actor,
      status: 'queued',
      cursor: 0,
      steps: v.definition.steps.map((s) => ({
        id: s.id,
        type: s.type,
        status: 'pending',
        result: null,
        errorCode: null,
        finishedAt: null,
      })),
      segment: 1,
      operations: [runOperationId(runId, 1)],
      approvalId: null,
      errorCode: null,
      errorMessage: null,
      createdAt: now,
      updatedAt: now,
      finishedAt: null,
    };
    try {
      await this.m.Run.create(run);
    } catch (e) {
      if (fixedRunId && isDuplicateKey(e)) throw conflict('assets.hook_replayed', 'this delivery id was already received');
      throw e;
    }
    await this.enqueueSegment(run, 1);
    return run;
  }

  private enqueueSegment(run: RunDoc, segment: number) {
    return this.d.engine.enqueue({
      id: runOperationId(run._id, segment),
      accountId: run.accountId,
      // Assets are account-scoped: a workflow that names no project files its runs under the account.
      projectId: run.projectId ?? run.accountId,
      resourceType: 'asset_workflow_run',
      resourceId: run._id,
      operationType: OP_WORKFLOW_RUN,
      input: { runId: run._id, segment },
      initiator: { type: run.trigger.type, key_id: run.trigger.keyId, delivery_id: run.trigger.deliveryId },
    });
  }

  async runs(p: Principal | null, workflowId: string, limit?: number, cursor?: string): Promise<Page<RunDoc>> {
    const wf = await this.get(p, workflowId);
    return this.page(this.m.Run, { accountId: wf.accountId, workflowId }, `runs:${workflowId}`, limit, cursor);
  }

  async getRun(p: Principal | null, runId: string): Promise<RunDoc> {
    const { accountId } = this.reader(p);
    const run = await this.m.Run.findOne({ _id: runId, accountId }).lean<RunDoc>().exec();
    if (!run) throw runNotFound();
    return run;
  }

  /** Stops a run that has not finished; its pending approval is withdrawn. 409 when already terminal. */
  async cancelRun(p: Principal | null, runId: string): Promise<RunDoc> {
    this.writer(p);
    const run = await this.getRun(p, runId);
    if (TERMINAL_RUN.has(run.status)) throw conflict('assets.workflow_run_finished', `the run is already ${run.status}`);
    const now = new Date();
    const next = await this.m.Run.findOneAndUpdate(
      { _id: runId, accountId: run.accountId, status: run.status, segment: run.segment },
      { $set: { status: 'cancelled', errorCode: 'cancelled', finishedAt: now, updatedAt: now } },
      { new: true },
    )
      .lean<RunDoc>()
      .exec();
    if (!next) return this.cancelRun(p, runId);
    const pending = run.approvalId ? await this.m.Approval.findById(run.approvalId).lean<ApprovalDoc>().exec() : null;
    if (pending?.status === 'pending') {
      // Withdrawn in agent activity too (a decision there that got in first finds the run cancelled).
      await this.agentActions()?.close({ approvalId: pending._id, accountId: pending.accountId, as: 'cancelled' });
      await this.m.Approval.updateOne(
        { _id: pending._id, status: 'pending' },
        { $set: { status: 'cancelled', updatedAt: now }, $push: { outbox: this.event(pending, 'cancelled', now) } },
      ).exec();
      this.relay.nudge();
    }
    return next;
  }

  /** Runs a failed or cancelled run again from the step it stopped at (steps done stay done). */
  async retryRun(p: Principal | null, runId: string): Promise<RunDoc> {
    this.writer(p);
    const run = await this.getRun(p, runId);
    if (run.status !== 'failed' && run.status !== 'cancelled') {
      throw conflict('assets.workflow_run_not_retryable', `only a failed or cancelled run can be retried (it is ${run.status})`);
    }
    const segment = run.segment + 1;
    const steps = run.steps.map((s, i) => (i >= run.cursor ? { ...s, status: 'pending' as const, errorCode: null } : s));
    const next = await this.m.Run.findOneAndUpdate(
      { _id: runId, accountId: run.accountId, status: run.status, segment: run.segment },
      {
        $set: {
          status: 'queued',
          segment,
          steps,
          approvalId: null,
          errorCode: null,
          errorMessage: null,
          finishedAt: null,
          updatedAt: new Date(),
        },
        $push: { operations: runOperationId(runId, segment) },
      },
      { new: true },
    )
      .lean<RunDoc>()
      .exec();
    if (!next) throw conflict('assets.workflow_run_changed', 'the run changed meanwhile; read it again');
    await this.enqueueSegment(next, segment);
    return next;
  }

  // ---- the executor -----------------------------------------------------------------------------

  /**
   * One segment of a run: from its cursor up to the end, or up to a `wait_for_approval` step (the
   * segment then ends; the decision starts the next one). Every write is conditional on the run
   * still being in this segment and at this cursor, so a cancel wins and a re-run changes nothing.
   */
  async executeRun(ctx: OperationContext): Promise<unknown> {
    const { runId, segment } = ctx.op.input as { runId: string; segment: number };
    let found = await this.m.Run.findById(runId).lean<RunDoc>().exec();
    if (!found || found.segment !== segment || (found.status !== 'queued' && found.status !== 'running')) {
      return { skipped: true, status: found?.status ?? null };
    }
    if (found.status === 'queued') {
      found = await this.m.Run.findOneAndUpdate(
        { _id: runId, segment, status: 'queued' },
        { $set: { status: 'running', updatedAt: new Date() } },
        { new: true },
      )
        .lean<RunDoc>()
        .exec();
      if (!found) return { skipped: true };
    }
    let run: RunDoc = found;
    const wf = await this.m.Workflow.findById(run.workflowId).lean<WorkflowDoc>().exec();
    if (!wf) throw workflowNotFound();
    const { definition } = await this.definitions.version(wf, run.version);
    while (run.cursor < definition.steps.length) {
      const i: number = run.cursor;
      const step = definition.steps[i];
      if (step.type === 'wait_for_approval') return this.pauseForApproval(run, step);
      let result: unknown;
      try {
        const current = run;
        result = await ctx.step(step.id, () => this.performStep(current, step, ctx.op._id));
      } catch (e) {
        const final = !(e instanceof PlatformError) || !e.retriable || ctx.op.attempt >= ctx.op.maxAttempts;
        if (final) await this.failRun(run, i, e);
        throw e;
      }
      const steps = withStep(run.steps, i, { status: 'succeeded', result, errorCode: null, finishedAt: new Date() });
      const next: RunDoc | null = await this.m.Run.findOneAndUpdate(
        { _id: runId, segment, status: 'running', cursor: i },
        { $set: { cursor: i + 1, steps, updatedAt: new Date() } },
        { new: true },
      )
        .lean<RunDoc>()
        .exec();
      if (!next) return { stopped: true };
      run = next;
    }
    const now = new Date();
    await this.m.Run.updateOne(
      { _id: runId, segment, status: 'running', cursor: run.cursor },
      { $set: { status: 'succeeded', finishedAt: now, updatedAt: now } },
    ).exec();
    return { status: 'succeeded' };
  }

  private async performStep(run: RunDoc, step: StepDef, operationId: string): Promise<unknown> {
    const assetId = run.input.asset_id as string | null;
    const config = STEP_CONFIGS[step.type as StepType].parse(step.config) as Record<string, unknown>;
    const assets = this.d.assets;
    switch (step.type) {
      case 'transform':
        return transformAsset(assets, run.actor, assetId!, (config as unknown as { transformation: string }).transformation);
      case 'tag': {
        const c = config as unknown as { add: string[]; remove: string[] };
        return tagAsset(assets, run.actor, assetId!, c.add, c.remove);
      }
      case 'move':
        return moveAsset(assets, run.actor, assetId!, (config as unknown as { bucket: string }).bucket);
      case 'notify': {
        // The event id is fixed by the operation and step: a re-run publishes a duplicate consumers drop.
        const event = {
          event_id: `${operationId}:${step.id}`,
          type: 'workflow.notification',
          account_id: run.accountId,
          workflow_id: run.workflowId,
          run_id: run._id,
          step_id: step.id,
          asset_id: assetId,
          message: (config as unknown as { message: string }).message,
          at: new Date().toISOString(),
        };
        await this.d.bus.publish([{ topic: this.d.notifyTopic(), key: run.accountId, value: event }]);
        return { event_id: event.event_id, topic: this.d.notifyTopic() };
      }
      default:
        throw badRequest('assets.workflow_invalid', `unknown step type ${step.type}`);
    }
  }

  private async failRun(run: RunDoc, i: number, e: unknown): Promise<void> {
    const code = e instanceof PlatformError ? e.code : 'internal_error';
    const message = e instanceof PlatformError ? e.message : 'the step failed';
    const now = new Date();
    await this.m.Run.updateOne(
      { _id: run._id, segment: run.segment, status: 'running', cursor: i },
      {
        $set: {
          status: 'failed',
          errorCode: code,
          errorMessage: message,
          steps: withStep(run.steps, i, { status: 'failed', errorCode: code, finishedAt: now }),
          finishedAt: now,
          updatedAt: now,
        },
      },
    ).exec();
  }

  /**
   * A segment's operation failed without the executor failing the run: the engine gave up on it
   * (every worker that claimed it died, `operation_abandoned`) or it never ran. Without this the
   * run would show `running` for ever. Read from the kernel's operation events; conditional on the
   * run still being in that segment at the cursor read, so a run the executor already ended, a
   * cancelled run and a later segment are left alone, and a redelivered event changes nothing.
   */
  async onOperationEvent(ev: OperationEvent): Promise<void> {
    if (ev.operationType !== OP_WORKFLOW_RUN || ev.status !== 'failed') return;
    const run = await this.m.Run.findById(ev.resourceId).lean<RunDoc>().exec();
    if (!run || (run.status !== 'queued' && run.status !== 'running')) return;
    if (runOperationId(run._id, run.segment) !== ev.id) return; // an earlier segment's operation
    const code = ev.errorCode ?? 'internal_error';
    const now = new Date();
    await this.m.Run.updateOne(
      { _id: run._id, segment: run.segment, status: run.status, cursor: run.cursor },
      {
        $set: {
          status: 'failed',
          errorCode: code,
          errorMessage: 'the platform stopped running this workflow run; retry it to resume where it stopped',
          steps:
            run.cursor < run.steps.length
              ? withStep(run.steps, run.cursor, { status: 'failed', errorCode: code, finishedAt: now })
              : run.steps,
          finishedAt: now,
          updatedAt: now,
        },
      },
    ).exec();
  }

  private async pauseForApproval(run: RunDoc, step: StepDef): Promise<unknown> {
    const config = STEP_CONFIGS.wait_for_approval.parse(step.config);
    const approvalId = stepApprovalId(run._id, run.segment, step.id);
    const now = new Date();
    await this.insertApproval(
      {
        _id: approvalId,
        accountId: run.accountId,
        kind: 'workflow_step',
        actionKey: 'assets.workflow.continue',
        actionHash: approvalHash([approvalId, 'assets.workflow.continue', run._id, run.segment, step.id]),
        title: config.title ?? `Continue workflow run at step ${step.id}`,
        status: 'pending',
        projectId: run.projectId,
        runId: run._id,
        stepId: step.id,
        tool: null,
        requestedBy: { type: 'workflow_run', id: run._id },
        actor: run.actor,
        expiresAt: new Date(now.getTime() + (config.expires_in ?? DEFAULT_APPROVAL_TTL_S) * 1000),
        decidedAt: null,
        decidedBy: null,
        note: null,
        operationId: null,
        outbox: [],
        createdAt: now,
        updatedAt: now,
      },
      `Workflow run ${run._id} waits at step ${step.id} for a person's approval before it continues`,
    );
    await this.m.Run.updateOne(
      { _id: run._id, segment: run.segment, status: 'running', cursor: run.cursor },
      {
        $set: {
          status: 'waiting_approval',
          approvalId,
          steps: withStep(run.steps, run.cursor, { status: 'waiting', result: { approval_id: approvalId } }),
          updatedAt: now,
        },
      },
    ).exec();
    return { waiting_for_approval: approvalId };
  }

  private async insertApproval(doc: ApprovalDoc, summary: string): Promise<void> {
    try {
      await this.m.Approval.create({ ...doc, outbox: [this.event(doc, 'pending', doc.createdAt)] });
      this.relay.nudge();
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
    }
    // Also after a duplicate: a retried step heals a proposal lost between the two writes.
    await this.agentActions()?.propose({
      actionKey: doc.actionKey,
      accountId: doc.accountId,
      scope: doc.projectId ? { type: 'project', projectId: doc.projectId } : { type: 'account' },
      approvalId: doc._id,
      actionHash: doc.actionHash,
      title: doc.title,
      summary,
      risk: APPROVAL_RISK[doc.kind],
      expiresAt: doc.expiresAt,
      principal: doc.requestedBy,
      resource: doc.runId ? { type: 'asset_workflow_run', id: doc.runId } : { type: 'asset_approval', id: doc._id },
    });
  }

  /**
   * The kernel's agent-action port (core/agent-actions.ts), when the activity area runs: approvals
   * are proposed there, so they show in agent activity and can be decided on either route.
   */
  private agentActions(): AgentActionsPort | null {
    return this.d.ports.has('agentActions') ? this.d.ports.get('agentActions') : null;
  }

  // ---- approvals -----------------------------------------------------------------------------

  async approvals(p: Principal | null, status: string | undefined, limit?: number, cursor?: string): Promise<Page<ApprovalDoc>> {
    const { accountId } = this.reader(p);
    const filter: Record<string, unknown> = { accountId };
    if (status) filter.status = status;
    return this.page(this.m.Approval, filter, `approvals:${accountId}:${status ?? ''}`, limit, cursor);
  }

  async getApproval(p: Principal | null, id: string): Promise<ApprovalDoc> {
    const { accountId } = this.reader(p);
    const a = await this.m.Approval.findOne({ _id: id, accountId }).lean<ApprovalDoc>().exec();
    if (!a) throw approvalNotFound();
    return a;
  }

  /**
   * A decision. The decision is recorded first (one conditional write), then its continuation is
   * started with an id fixed by the approval, so repeating the same decision is safe and starts
   * nothing twice. The opposite decision afterwards is 409; a decision after expiry is 410.
   */
  async decide(
    p: Principal | null,
    id: string,
    decision: 'approved' | 'rejected',
    body: { actionHash?: string | null; note?: string | null },
  ): Promise<ApprovalDoc> {
    const who = this.writer(p);
    const a = await this.getApproval(p, id);
    // Spec 5.5: an owner (or the governance scope) decides, never the key that asked (decision 0095).
    const refusal = decisionRefusal(who, a.requestedBy as Requester);
    if (refusal) throw refusal;
    if (body.actionHash && body.actionHash !== a.actionHash) {
      throw conflict('assets.approval_hash_mismatch', 'action_hash does not match this approval');
    }
    const port = this.agentActions();
    if (port && a.status === 'pending' && a.expiresAt.getTime() <= Date.now()) {
      // Past its time here: expired (in agent activity too), unless a decision there got in first.
      await this.expire(a);
      const after = await this.getApproval(p, id);
      if (after.status === 'expired')
        throw new PlatformError('assets.approval_expired', 410, 'the approval expired before a decision');
    }
    if (port) {
      // The agent action is the arbiter: one conditional update there decides, on this route or on
      // the activity route; its performer (applyDecision) then records it here and continues.
      const r = await port.decide({
        approvalId: id,
        accountId: a.accountId,
        decision: decision === 'approved' ? 'approved' : 'denied',
        decidedBy: who.keyId,
        note: body.note ?? null,
      });
      if (r.outcome === 'expired') {
        await this.expire(a);
        throw new PlatformError('assets.approval_expired', 410, 'the approval expired before a decision');
      }
      if (r.outcome === 'withdrawn') {
        throw conflict('assets.approval_already_decided', 'the approval is already cancelled', { status: 'cancelled' });
      }
      if (r.outcome === 'conflict') {
        const status = r.decision === 'approved' ? 'approved' : 'rejected';
        throw conflict('assets.approval_already_decided', `the approval is already ${status}`, { status });
      }
      // `unknown`: an approval recorded before its proposal (or without the activity area): below.
      if (r.outcome !== 'unknown') return this.getApproval(p, id);
    }
    return this.decideHere(a, decision, who.keyId, body.note ?? null);
  }

  /** The decision recorded on the approval itself (conditional on pending), then its continuation. */
  private async decideHere(
    a: ApprovalDoc,
    decision: 'approved' | 'rejected',
    decidedBy: string | null,
    note: string | null,
    /** The agent action already recorded this decision in time: no expiry check of our own. */
    arbitrated = false,
  ): Promise<ApprovalDoc> {
    const now = new Date();
    let decided = a;
    if (a.status === 'pending') {
      if (!arbitrated && a.expiresAt.getTime() <= now.getTime()) {
        await this.expire(a);
        throw new PlatformError('assets.approval_expired', 410, 'the approval expired before a decision');
      }
      const next = await this.m.Approval.findOneAndUpdate(
        { _id: a._id, accountId: a.accountId, status: 'pending' },
        {
          $set: { status: decision, decidedAt: now, decidedBy, note, updatedAt: now },
          $push: { outbox: this.event({ ...a, decidedBy }, decision, now) },
        },
        { new: true },
      )
        .lean<ApprovalDoc>()
        .exec();
      if (!next) {
        const again = await this.m.Approval.findById(a._id).lean<ApprovalDoc>().exec();
        return this.decideHere(again!, decision, decidedBy, note, arbitrated);
      }
      this.relay.nudge();
      decided = next;
    } else if (a.status === 'expired') {
      throw new PlatformError('assets.approval_expired', 410, 'the approval expired before a decision');
    } else if (a.status !== decision) {
      throw conflict('assets.approval_already_decided', `the approval is already ${a.status}`, { status: a.status });
    }
    // Same decision again (or the first one): make sure its continuation happened.
    return this.continueAfter(decided);
  }

  /**
   * The performer of `assets.*` agent actions (registered in the area's `provides`): called once
   * the action is decided, on either route, and again on a retried decision. Records the decision
   * on the approval (a no-op when already recorded) and continues the run or performs the tool call
   * (both idempotent on ids fixed by the approval).
   */
  async applyDecision(d: DecidedAgentAction): Promise<{ operations: AgentActionOperationLink[] }> {
    const a = await this.m.Approval.findOne({ _id: d.approvalId, accountId: d.accountId }).lean<ApprovalDoc>().exec();
    if (!a) throw approvalNotFound();
    const done = await this.decideHere(a, d.decision === 'approved' ? 'approved' : 'rejected', d.decidedBy, d.note, true);
    if (!done.operationId) return { operations: [] };
    return {
      operations: [
        {
          activityId: `operation:${done.operationId}`,
          resourceType: done.kind === 'automation_tool' ? 'asset_automation_action' : 'asset_workflow_run',
          resourceId: done.kind === 'automation_tool' ? done._id : done.runId!,
          projectId: done.projectId,
          relation: 'originated',
        },
      ],
    };
  }

  /**
   * Expires pending approvals past their time (and fails the runs waiting on them), at most
   * `batch` per call; the sweep worker calls it every APPROVAL_SWEEP_MS. Returns how many it expired.
   */
  async sweepExpired(batch = 100): Promise<number> {
    const due = await this.m.Approval.find({ status: 'pending', expiresAt: { $lte: new Date() } })
      .limit(batch)
      .lean<ApprovalDoc[]>()
      .exec();
    for (const a of due) await this.expire(a);
    return due.length;
  }

  private async expire(a: ApprovalDoc): Promise<void> {
    const closed = await this.agentActions()?.close({ approvalId: a._id, accountId: a.accountId, as: 'expired' });
    if (closed?.decision) {
      // A decision on the activity route won the race against the expiry: it stands.
      await this.decideHere(a, closed.decision === 'approved' ? 'approved' : 'rejected', null, null, true).catch((e) =>
        this.d.log.warn({ err: e, approvalId: a._id }, 'decided approval not applied at expiry'),
      );
      return;
    }
    const now = new Date();
    await this.m.Approval.updateOne(
      { _id: a._id, status: 'pending' },
      { $set: { status: 'expired', updatedAt: now }, $push: { outbox: this.event(a, 'expired', now) } },
    ).exec();
    this.relay.nudge();
    if (a.runId) {
      await this.m.Run.updateOne(
        { _id: a.runId, status: 'waiting_approval', approvalId: a._id },
        {
          $set: {
            status: 'failed',
            errorCode: 'assets.approval_expired',
            errorMessage: 'the approval expired',
            finishedAt: now,
            updatedAt: now,
          },
        },
      ).exec();
    }
  }

  private async continueAfter(a: ApprovalDoc): Promise<ApprovalDoc> {
    const now = new Date();
    if (a.kind === 'automation_tool') {
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
        (await this.m.Approval.findOneAndUpdate({ _id: a._id }, { $set: { operationId: opId, updatedAt: now } }, { new: true })
          .lean<ApprovalDoc>()
          .exec()) ?? a
      );
    }
    const run = a.runId ? await this.m.Run.findById(a.runId).lean<RunDoc>().exec() : null;
    if (!run) return a;
    if (run.status === 'waiting_approval' && run.approvalId === a._id) {
      if (a.status === 'rejected') {
        await this.m.Run.updateOne(
          { _id: run._id, status: 'waiting_approval', approvalId: a._id },
          {
            $set: {
              status: 'failed',
              errorCode: 'assets.approval_rejected',
              errorMessage: 'a person rejected the run',
              steps: withStep(run.steps, run.cursor, {
                status: 'failed',
                errorCode: 'assets.approval_rejected',
                finishedAt: now,
              }),
              approvalId: null,
              finishedAt: now,
              updatedAt: now,
            },
          },
        ).exec();
        return a;
      }
      const segment = run.segment + 1;
      const steps = withStep(run.steps, run.cursor, {
        status: 'succeeded',
        result: { approval_id: a._id, decided_by: a.decidedBy },
        finishedAt: now,
      });
      const moved = await this.m.Run.updateOne(
        { _id: run._id, status: 'waiting_approval', approvalId: a._id, segment: run.segment },
        {
          $set: { status: 'queued', cursor: run.cursor + 1, segment, steps, approvalId: null, updatedAt: now },
          $push: { operations: runOperationId(run._id, segment) },
        },
      ).exec();
      if (moved.modifiedCount === 1) await this.enqueueSegment(run, segment);
    } else if (a.status === 'approved' && run.status === 'queued') {
      // A repeated approval whose first attempt moved the run but did not confirm the enqueue.
      await this.enqueueSegment(run, run.segment);
    }
    const opId = a.status === 'approved' ? runOperationId(run._id, run.segment + (run.approvalId === a._id ? 1 : 0)) : null;
    if (opId && !a.operationId) {
      return (
        (await this.m.Approval.findOneAndUpdate({ _id: a._id, operationId: null }, { $set: { operationId: opId } }, { new: true })
          .lean<ApprovalDoc>()
          .exec()) ?? a
      );
    }
    return a;
  }

  // ---- automation: governed tool calls (automation.ts) -------------------------------------

  /** Performs an approved automation tool call (once: the operation's step records its result). */
  executeAction(ctx: OperationContext): Promise<unknown> {
    return this.automation.executeAction(ctx);
  }
  callTool(
    p: Principal,
    t: GovernedTool,
    args: Record<string, unknown>,
  ): Promise<{ outcome: 'allowed' | 'approval_required'; result?: unknown; approval?: ApprovalDoc }> {
    return this.automation.callTool(p, t, args);
  }
  recentAudits(p: Principal | null): Promise<AuditDoc[]> {
    return this.automation.recentAudits(p);
  }

  private page<T extends { _id: string; createdAt: Date }>(
    model: import('mongoose').Model<T>,
    filter: Record<string, unknown>,
    binding: string,
    limit?: number,
    cursor?: string,
  ): Promise<Page<T>> {
    return pageOf(model, filter, binding, limit, cursor);
  }
}

function withStep(steps: RunStepDoc[], i: number, patch: Partial<RunStepDoc>): RunStepDoc[] {
  return steps.map((s, j) => (j === i ? { ...s, ...patch } : s));
}
