import type { AgentActionOperationLink, AgentActionsPort, DecidedAgentAction } from '../../../core/agent-actions';
import { decisionRefusal, type Requester } from '../../../core/decision-rights';
import { PlatformError, conflict, notFound } from '../../../core/errors';
import type { EventBus } from '../../../core/events/event-bus';
import { OutboxRelay } from '../../../core/events/outbox';
import type { Logger } from '../../../core/logger';
import { isDuplicateKey } from '../../../core/mongo';
import type { Ports } from '../../../core/ports';
import type { Principal } from '../../../core/principal';
import { approvalEventEntry } from './activity';
import type { ApprovalDoc, WorkflowModels } from './model';
import { type Page, pageOf } from './paging';

/** How often pending approvals past their expiry are expired (and their runs failed): 30 s. */
export const APPROVAL_SWEEP_MS = 30_000;
/** How an approval is shown in agent activity: a run's gate moves work on; a tool call changes assets. */
const APPROVAL_RISK: Record<ApprovalDoc['kind'], 'low' | 'medium' | 'high'> = {
  workflow_step: 'medium',
  automation_tool: 'medium',
};

const approvalNotFound = () => notFound('assets.approval_not_found', 'approval not found');

export interface ApprovalDeps {
  models: WorkflowModels;
  bus: EventBus;
  ports: Ports;
  log: Logger;
  /** Physical name of `<prefix>.assets.approvals` (the approvals' activity source). */
  approvalsTopic(): string;
  reader(p: Principal | null | undefined): Principal;
  writer(p: Principal | null | undefined): Principal;
  /**
   * What a recorded decision starts: the run's next segment (runs.ts) or the tool call
   * (automation.ts). Called again on a repeated decision, so it must be idempotent.
   */
  continueAfter(a: ApprovalDoc): Promise<ApprovalDoc>;
  /** An approval expired: the run waiting on it fails (runs.ts). */
  expired(a: ApprovalDoc, now: Date): Promise<void>;
}

/**
 * Approvals of a run's `wait_for_approval` step and of governed tool calls: opening one, listing,
 * deciding (on this route or as an agent action on the activity route; core/agent-actions.ts),
 * withdrawing and expiring. Every change writes its event into the approval's outbox in the same
 * update (activity.ts); `relay` publishes them.
 */
export class WorkflowApprovals {
  /** Publishes the approvals' outbox (started where the area's workers run). */
  readonly relay: OutboxRelay;

  constructor(private readonly d: ApprovalDeps) {
    // Decisions nudge it at once; the idle scan is for other processes' writes (as the engine's).
    this.relay = new OutboxRelay({ models: [d.models.Approval], bus: d.bus, intervalMs: 1_000 });
  }

  private get m() {
    return this.d.models;
  }

  private event(a: ApprovalDoc, status: ApprovalDoc['status'], at: Date) {
    return approvalEventEntry(this.d.approvalsTopic(), a, status, at);
  }

  /** Records a pending approval with its agent action: the approvals' one way in (runs and tool calls). */
  async open(doc: ApprovalDoc, summary: string): Promise<void> {
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

  /** Withdraws a pending approval (a cancelled run's), in agent activity too; a decided one stays. */
  async withdraw(approvalId: string): Promise<void> {
    const pending = await this.m.Approval.findById(approvalId).lean<ApprovalDoc>().exec();
    if (pending?.status !== 'pending') return;
    // Withdrawn in agent activity too (a decision there that got in first finds the run cancelled).
    await this.agentActions()?.close({ approvalId: pending._id, accountId: pending.accountId, as: 'cancelled' });
    const now = new Date();
    await this.m.Approval.updateOne(
      { _id: pending._id, status: 'pending' },
      { $set: { status: 'cancelled', updatedAt: now }, $push: { outbox: this.event(pending, 'cancelled', now) } },
    ).exec();
    this.relay.nudge();
  }

  /**
   * The kernel's agent-action port (core/agent-actions.ts), when the activity area runs: approvals
   * are proposed there, so they show in agent activity and can be decided on either route.
   */
  private agentActions(): AgentActionsPort | null {
    return this.d.ports.has('agentActions') ? this.d.ports.get('agentActions') : null;
  }

  async list(p: Principal | null, status: string | undefined, limit?: number, cursor?: string): Promise<Page<ApprovalDoc>> {
    const { accountId } = this.d.reader(p);
    const filter: Record<string, unknown> = { accountId };
    if (status) filter.status = status;
    return pageOf(this.m.Approval, filter, `approvals:${accountId}:${status ?? ''}`, limit, cursor);
  }

  async get(p: Principal | null, id: string): Promise<ApprovalDoc> {
    const { accountId } = this.d.reader(p);
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
    const who = this.d.writer(p);
    const a = await this.get(p, id);
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
      const after = await this.get(p, id);
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
      if (r.outcome !== 'unknown') return this.get(p, id);
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
    return this.d.continueAfter(decided);
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
    await this.d.expired(a, now);
  }
}
