import { createHash, randomUUID } from 'node:crypto';
import { PlatformError, badRequest, conflict } from '../../core/errors';
import { isUuid } from '../../core/ids';
import type {
  AgentActionDecision,
  AgentActionPerformers,
  AgentActionProposal,
  AgentActionsPort,
  AreaDecisionOutcome,
} from '../../core/agent-actions';
import { isDuplicateKey } from '../../core/mongo';
import type { SiteActions } from '../../core/site-actions';
import type { OperationEngine } from '../../core/operations/engine';
import type { Principal } from '../../core/principal';
import type { ActivityModels, AgentActionDoc, AuthorizationBasis, AuthorizationOutcome, OperationLinkDoc } from './model';
import { notFoundActivity } from './reads';
import { WITHHELD_ACTION_KEYS } from './views';
import { decisionRefusal } from '../../core/decision-rights';

/**
 * Agent actions (spec 2.7, 3.6, 4.7): a governed tool call, its approval and the continuation that
 * does the work once it is allowed. The decision endpoint owns the continuation: a committed
 * decision is recorded first (one conditional write), then the work is started with a fixed
 * operation id, so retrying the same decision never starts it twice.
 */

export type ApprovalMode = 'required' | 'none' | 'standing_policy';
export const APPROVAL_MODES: ApprovalMode[] = ['required', 'none', 'standing_policy'];
/** How long a pending approval waits for a decision when `--expires-in` is absent: one hour. */
export const DEFAULT_APPROVAL_TTL_S = 3600;
const ACTION_KEY = /^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)+$/;
const READ_ONLY_VERBS = new Set(['read', 'list', 'get']);

export const isReadOnlyKey = (key: string) => READ_ONLY_VERBS.has(key.slice(key.lastIndexOf('.') + 1));

/** The hash a decision must offer: binds it to exactly this action, project and objective. */
export function actionHash(a: Pick<AgentActionDoc, '_id' | 'actionKey' | 'projectId' | 'objectiveId'>): string {
  return createHash('sha256')
    .update(JSON.stringify([a._id, a.actionKey, a.projectId, a.objectiveId]))
    .digest('hex');
}

function derivedUuid(seed: string): string {
  const h = createHash('sha256').update(seed).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** A UUID fixed by the action: the id of the operation it originates (enqueue is idempotent on it). */
const originatedOperationId = (actionId: string) => derivedUuid(`originated:${actionId}`);
/** The action of an area's proposal, fixed by its approval id: proposing again finds the same one. */
export const proposedActionId = (approvalId: string) => derivedUuid(`proposed:${approvalId}`);
/** What a proposal's pending approval waits at most: 30 days (an area's longer expiry is cut to it). */
export const MAX_PROPOSAL_TTL_S = 30 * 24 * 3600;
/** A decided action whose work is unconfirmed this long is re-driven by the sweep: 30 s. */
export const REDRIVE_AFTER_MS = 30_000;

export interface ActInput {
  accountId: string;
  projectId: string;
  actionKey: string;
  approval?: ApprovalMode;
  expiresInS?: number;
  objectiveId?: string;
  principal: { type: string; id: string | null };
}

export interface ActionDeps {
  models: ActivityModels;
  engine: OperationEngine;
  /** The publisher's lifecycle actions (kernel port, read at call time). */
  siteActions: () => SiteActions;
  /** Performers of proposed actions by key prefix (kernel-owned registry). */
  performers: () => AgentActionPerformers;
  /** Told after every change of an action (the live feed). */
  changed?: (a: AgentActionDoc) => Promise<void> | void;
}

export class ContinuationUnavailable extends Error {}

/** What a known action key does once allowed; returns the operations it originated. */
type Work = (a: AgentActionDoc, d: ActionDeps) => Promise<OperationLinkDoc[]>;

const KNOWN_WORK: Record<string, Work> = {
  /** Restarts the project's publishing site through the publisher's own `restart` operation. */
  'publisher.site.restart': async (a, d) => {
    if (!a.projectId) throw conflict('site_not_found', 'an account-wide action names no site to restart');
    const projectId = a.projectId;
    // Through the publisher's own port: the restart takes the site's lifecycle lock and fencing.
    const op = await d.siteActions().run({
      accountId: a.accountId,
      projectId,
      action: 'restart',
      operationId: originatedOperationId(a._id),
      initiator: { type: 'agent_tool_execution', id: a._id, objective_id: a.objectiveId },
    });
    return [
      {
        activityId: `operation:${op.operationId}`,
        resourceType: 'site',
        resourceId: projectId,
        projectId,
        relation: 'originated',
      },
    ];
  },
};

export class AgentActions {
  constructor(private readonly d: ActionDeps) {}

  async act(input: ActInput): Promise<AgentActionDoc> {
    if (!ACTION_KEY.test(input.actionKey))
      throw badRequest('invalid_action_key', 'action key must be dotted words, e.g. publisher.site.restart');
    if (input.objectiveId !== undefined && !isUuid(input.objectiveId))
      throw badRequest('invalid_objective', 'objective must be a UUID');
    const readOnly = isReadOnlyKey(input.actionKey);
    const mode = input.approval ?? (readOnly ? 'none' : 'required');
    const ttl = input.expiresInS ?? DEFAULT_APPROVAL_TTL_S;
    if (!Number.isInteger(ttl) || ttl < 0) throw badRequest('invalid_expiry', 'expires-in must be a whole number of seconds');
    const now = new Date();
    const id = randomUUID();
    const base = {
      _id: id,
      actionKey: input.actionKey,
      projectId: input.projectId,
      objectiveId: input.objectiveId ?? randomUUID(),
    };
    let authorization: { outcome: AuthorizationOutcome; basis: AuthorizationBasis } | null;
    if (mode === 'required') authorization = null;
    else if (mode === 'standing_policy') authorization = { outcome: 'automatic', basis: 'standing_policy' };
    // Without an approval, only a read-only key has a rule that proves it allowed; any other is unproven.
    else authorization = readOnly ? { outcome: 'automatic', basis: 'read_only_rule' } : { outcome: 'not_recorded', basis: null };
    const approvalId = mode === 'required' ? randomUUID() : null;
    const doc: AgentActionDoc = {
      ...base,
      accountId: input.accountId,
      actionHash: actionHash(base),
      status: mode === 'required' ? 'pending_approval' : 'queued',
      continuation: mode === 'required' ? 'waiting_approvals' : 'queued',
      authorization,
      approvalId,
      approval: approvalId
        ? {
            id: approvalId,
            status: 'pending',
            expiresAt: new Date(now.getTime() + ttl * 1000),
            decision: null,
            decidedAt: null,
            decidedBy: null,
          }
        : null,
      principal: input.principal,
      operations: [],
      errorCode: null,
      current: true,
      createdAt: now,
      updatedAt: now,
      finishedAt: null,
    };
    await this.d.models.Action.create(doc);
    await this.d.changed?.(doc);
    if (mode === 'required') return doc;
    return this.continueWork(doc).catch(async () => (await this.get(id)) ?? doc);
  }

  get(id: string): Promise<AgentActionDoc | null> {
    return this.d.models.Action.findById(id).lean<AgentActionDoc>().exec();
  }

  /**
   * Runs the action's work once (a recorded no-op for unknown keys) and settles it. Safe to call
   * again: the originated operation has a fixed id. Throws ContinuationUnavailable when the work
   * could not be confirmed started (the action stays `queued` with continuation `unavailable`).
   */
  async continueWork(a: AgentActionDoc): Promise<AgentActionDoc> {
    if (a.continuation === 'settled' || a.continuation === 'not_required') return a;
    let set: Partial<AgentActionDoc>;
    try {
      const operations = await this.work(a);
      set = { status: 'succeeded', continuation: 'settled', operations, current: false, errorCode: null };
    } catch (e) {
      if (e instanceof PlatformError && e.status < 500) {
        // The work itself was refused (e.g. no site): the action failed, nothing is left to continue.
        set = { status: 'failed', continuation: 'settled', current: false, errorCode: e.code };
      } else {
        await this.write(a, { continuation: 'unavailable' }).catch(() => undefined);
        throw new ContinuationUnavailable(e instanceof Error ? e.message : String(e));
      }
    }
    const now = new Date();
    return (await this.write(a, { ...set, finishedAt: now })) ?? a;
  }

  /** The work of an allowed action: its proposing area's performer, else a known key's, else none. */
  private async work(a: AgentActionDoc): Promise<OperationLinkDoc[]> {
    if (a.proposal) {
      const performer = this.d.performers().performerFor(a.actionKey);
      // A proposal whose area registered no performer in this process is a wiring fault: not done.
      if (!performer) throw new Error(`no performer is registered for ${a.actionKey}`);
      return (await performer.perform(this.decidedFor(a))).operations;
    }
    const known = KNOWN_WORK[a.actionKey];
    return known ? known(a, this.d) : [];
  }

  private decidedFor(a: AgentActionDoc) {
    return {
      approvalId: a.approvalId!,
      accountId: a.accountId,
      actionKey: a.actionKey,
      decision: a.approval!.decision!,
      decidedBy: a.approval!.decidedBy,
      note: (a.approval as { note?: string | null }).note ?? null,
    };
  }

  /**
   * What follows a recorded decision: an approval runs the work; a denial of a proposed action is
   * told to its area (a workflow run waiting on it fails), once more on every retry (idempotent).
   */
  private async settleDecision(a: AgentActionDoc): Promise<AgentActionDoc> {
    if (a.approval?.decision === 'approved') return this.continueWork(a);
    if (a.approval?.decision !== 'denied' || !a.proposal) return a;
    try {
      await this.work(a);
    } catch (e) {
      if (e instanceof PlatformError && e.status < 500) return a;
      await this.write(a, { continuation: 'unavailable' }).catch(() => undefined);
      throw new ContinuationUnavailable(e instanceof Error ? e.message : String(e));
    }
    return a.continuation === 'unavailable' ? ((await this.write(a, { continuation: 'not_required' })) ?? a) : a;
  }

  private async write(a: AgentActionDoc, set: Partial<AgentActionDoc>): Promise<AgentActionDoc | null> {
    const next = await this.d.models.Action.findOneAndUpdate(
      { _id: a._id, continuation: { $ne: 'settled' } },
      { $set: { ...set, updatedAt: new Date() } },
      { new: true },
    )
      .lean<AgentActionDoc>()
      .exec();
    if (next) await this.d.changed?.(next);
    return next;
  }

  /**
   * A decision (or its recovery) on an approval: spec 4.7 rules 1–5 and 3.6. Returns the action as
   * recorded; throws ContinuationUnavailable (with the decision committed) when the work could not
   * be confirmed started.
   */
  async decide(
    p: Principal,
    approvalId: string,
    body: { decision: 'approved' | 'denied'; actionHash: string; note?: string | null },
    canAccessProject: (projectId: string) => Promise<boolean>,
  ): Promise<AgentActionDoc> {
    if (!isUuid(approvalId)) throw badRequest('invalid_id', 'approval id is not a valid id');
    let a = await this.d.models.Action.findOne({ approvalId, accountId: p.accountId }).lean<AgentActionDoc>().exec();
    // An account-wide action has no project to check: the account filter above is its boundary.
    if (!a || !a.approval || (a.projectId !== null && !(await canAccessProject(a.projectId)))) {
      throw notFoundActivity('approval');
    }
    if (WITHHELD_ACTION_KEYS.has(a.actionKey)) {
      throw conflict('decision_withheld', 'decisions on this action are not offered through this endpoint');
    }
    const refusal = decisionRefusal(p, a.principal);
    if (refusal) throw refusal;
    if (body.actionHash !== a.actionHash || a.status === 'superseded') {
      throw conflict('action_changed', 'the action hash does not match the action as recorded');
    }
    const now = new Date();
    if (a.approval.status === 'pending') {
      if (a.approval.expiresAt <= now) {
        await this.expire(a, now);
        throw new PlatformError('approval_expired', 410, 'the approval expired before a decision was recorded');
      }
      const decided = await this.record(a, body.decision, p.keyId, body.note ?? null, now);
      if (decided) return this.settleDecision(decided);
      // Another decision won the race (or it just expired): judge against what is recorded now.
      a = (await this.get(a._id))!;
    }
    const approval = a.approval!;
    if (approval.status === 'expired')
      throw new PlatformError('approval_expired', 410, 'the approval expired before a decision was recorded');
    if (approval.status === 'cancelled') throw conflict('approval_withdrawn', 'the approval was withdrawn before a decision');
    if (approval.status === 'pending') {
      await this.expire(a, now);
      throw new PlatformError('approval_expired', 410, 'the approval expired before a decision was recorded');
    }
    const recordedNote = (approval as { note?: string | null }).note ?? null;
    if (approval.decision !== body.decision || (body.note != null && body.note !== recordedNote)) {
      throw conflict('decision_conflict', `a different decision (${approval.decision}) is already recorded`);
    }
    return this.settleDecision(a);
  }

  /**
   * The one conditional update every decision goes through, from either route: pending and not
   * expired → decided. Null when another decision (or expiry) got there first.
   */
  private async record(
    a: AgentActionDoc,
    decision: AgentActionDecision,
    decidedBy: string | null,
    note: string | null,
    now: Date,
  ): Promise<AgentActionDoc | null> {
    const approved = decision === 'approved';
    const decided = await this.d.models.Action.findOneAndUpdate(
      { _id: a._id, 'approval.status': 'pending', 'approval.expiresAt': { $gt: now } },
      {
        $set: {
          'approval.status': decision,
          'approval.decision': decision,
          'approval.decidedAt': now,
          'approval.decidedBy': decidedBy,
          'approval.note': note,
          authorization: approved ? { outcome: 'human_approved', basis: 'human_decision' } : null,
          status: approved ? 'queued' : 'cancelled',
          continuation: approved ? 'queued' : 'not_required',
          current: approved,
          finishedAt: approved ? null : now,
          updatedAt: now,
        },
      },
      { new: true },
    )
      .lean<AgentActionDoc>()
      .exec();
    if (decided) await this.d.changed?.(decided);
    return decided;
  }

  // ---- the kernel port (core/agent-actions.ts) --------------------------------------------------

  /** An area's proposal, pending approval (idempotent on the area's approval id). */
  async propose(pr: AgentActionProposal, area: string): Promise<AgentActionDoc> {
    if (!ACTION_KEY.test(pr.actionKey)) throw new Error(`invalid action key ${pr.actionKey}`);
    const id = proposedActionId(pr.approvalId);
    const now = new Date();
    const latest = new Date(now.getTime() + MAX_PROPOSAL_TTL_S * 1000);
    const doc: AgentActionDoc = {
      _id: id,
      accountId: pr.accountId,
      projectId: pr.scope.type === 'project' ? pr.scope.projectId : null,
      // One proposal is one objective: the area's request, however many retries it takes.
      objectiveId: derivedUuid(`objective:${pr.approvalId}`),
      actionKey: pr.actionKey,
      actionHash: pr.actionHash,
      status: 'pending_approval',
      continuation: 'waiting_approvals',
      authorization: null,
      approvalId: pr.approvalId,
      approval: {
        id: pr.approvalId,
        status: 'pending',
        expiresAt: pr.expiresAt < latest ? pr.expiresAt : latest,
        decision: null,
        decidedAt: null,
        decidedBy: null,
      },
      principal: pr.principal,
      operations: [],
      errorCode: null,
      current: true,
      createdAt: now,
      updatedAt: now,
      finishedAt: null,
      proposal: { area, title: pr.title, summary: pr.summary, risk: pr.risk, resource: pr.resource ?? null },
    };
    try {
      await this.d.models.Action.create(doc);
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
      return (await this.get(id))!;
    }
    await this.d.changed?.(doc);
    return doc;
  }

  /** A decision through the proposing area's own route (the area checked who may decide). */
  async areaDecide(input: {
    approvalId: string;
    accountId: string;
    decision: AgentActionDecision;
    decidedBy: string | null;
    note?: string | null;
  }): Promise<AreaDecisionOutcome> {
    const id = proposedActionId(input.approvalId);
    let a = await this.d.models.Action.findOne({ _id: id, accountId: input.accountId }).lean<AgentActionDoc>().exec();
    if (!a?.approval) return { outcome: 'unknown' };
    const now = new Date();
    let outcome: 'recorded' | 'repeated' = 'repeated';
    if (a.approval.status === 'pending' && a.approval.expiresAt > now) {
      const decided = await this.record(a, input.decision, input.decidedBy, input.note ?? null, now);
      if (decided) outcome = 'recorded';
      a = decided ?? (await this.get(id))!;
    }
    const st = a.approval!.status;
    if (st === 'pending') {
      await this.expire(a, now);
      return { outcome: 'expired' };
    }
    if (st === 'expired') return { outcome: 'expired' };
    if (st === 'cancelled') return { outcome: 'withdrawn' };
    if (a.approval!.decision !== input.decision) return { outcome: 'conflict', decision: a.approval!.decision! };
    try {
      await this.settleDecision(a);
    } catch (e) {
      if (e instanceof ContinuationUnavailable) {
        throw new PlatformError('approval_continuation_unavailable', 503, 'the decision is recorded; retry the same decision');
      }
      throw e;
    }
    return { outcome, decision: input.decision };
  }

  /** The area ends a pending approval without a decision; the decision instead when one won. */
  async close(input: { approvalId: string; accountId: string; as: 'expired' | 'cancelled' }) {
    const id = proposedActionId(input.approvalId);
    const now = new Date();
    const next = await this.d.models.Action.findOneAndUpdate(
      { _id: id, accountId: input.accountId, 'approval.status': 'pending' },
      {
        $set: {
          'approval.status': input.as,
          status: input.as,
          continuation: input.as === 'expired' ? 'blocked' : 'not_required',
          current: false,
          finishedAt: now,
          updatedAt: now,
        },
      },
      { new: true },
    )
      .lean<AgentActionDoc>()
      .exec();
    if (next) {
      await this.d.changed?.(next);
      return { closed: true, decision: null };
    }
    const a = await this.get(id);
    return { closed: false, decision: a?.approval?.decision ?? null };
  }

  /** This service as the kernel port, for areas to propose and settle through. */
  port(area: (actionKey: string) => string): AgentActionsPort {
    return {
      propose: async (pr) => ({ actionId: (await this.propose(pr, area(pr.actionKey)))._id }),
      decide: (input) => this.areaDecide(input),
      close: (input) => this.close(input),
    };
  }

  private async expire(a: AgentActionDoc, now: Date): Promise<void> {
    const next = await this.d.models.Action.findOneAndUpdate(
      { _id: a._id, 'approval.status': 'pending' },
      {
        $set: {
          'approval.status': 'expired',
          status: 'expired',
          continuation: 'blocked',
          current: false,
          finishedAt: now,
          updatedAt: now,
        },
      },
      { new: true },
    )
      .lean<AgentActionDoc>()
      .exec();
    if (next) await this.d.changed?.(next);
  }

  /**
   * Re-drives decided actions whose work was never confirmed (a crash between the decision and its
   * performer, or a performer that was unavailable): approved ones still `queued` or `unavailable`,
   * denied proposals left `unavailable`, untouched for `quietMs`. At most `batch` per pass; each is
   * idempotent (fixed operation ids, conditional writes). Returns how many it tried.
   */
  async redriveContinuations(quietMs = REDRIVE_AFTER_MS, batch = 50, now = new Date()): Promise<number> {
    const due = await this.d.models.Action.find({
      continuation: { $in: ['queued', 'unavailable'] },
      'approval.decision': { $in: ['approved', 'denied'] },
      updatedAt: { $lte: new Date(now.getTime() - quietMs) },
    })
      .limit(batch)
      .lean<AgentActionDoc[]>()
      .exec();
    for (const a of due) await this.settleDecision(a).catch(() => undefined);
    return due.length;
  }

  /** Settles pending approvals of a project that expired unanswered (reads call it first). */
  async expireDue(accountId: string, projectId: string | { $in: (string | null)[] }, now = new Date()): Promise<void> {
    const due = await this.d.models.Action.find({
      accountId,
      projectId,
      status: 'pending_approval',
      'approval.expiresAt': { $lte: now },
    })
      .lean<AgentActionDoc[]>()
      .exec();
    for (const a of due) await this.expire(a, now);
  }
}
