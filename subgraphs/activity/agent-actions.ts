import { createHash, randomUUID } from 'node:crypto';
import { PlatformError, badRequest, conflict, forbidden } from '../../core/errors';
import { isUuid } from '../../core/ids';
import type { SiteActions } from '../../core/site-actions';
import type { OperationEngine } from '../../core/operations/engine';
import type { Principal } from '../../core/principal';
import type { ActivityModels, AgentActionDoc, AuthorizationBasis, AuthorizationOutcome, OperationLinkDoc } from './model';
import { notFoundActivity } from './reads';
import { WITHHELD_ACTION_KEYS } from './views';

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

/** A UUID fixed by the action: the id of the operation it originates (enqueue is idempotent on it). */
function originatedOperationId(actionId: string): string {
  const h = createHash('sha256').update(`originated:${actionId}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

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
  /** Told after every change of an action (the live feed). */
  changed?: (a: AgentActionDoc) => Promise<void> | void;
}

export class ContinuationUnavailable extends Error {}

/** What a known action key does once allowed; returns the operations it originated. */
type Work = (a: AgentActionDoc, d: ActionDeps) => Promise<OperationLinkDoc[]>;

const KNOWN_WORK: Record<string, Work> = {
  /** Restarts the project's publishing site through the publisher's own `restart` operation. */
  'publisher.site.restart': async (a, d) => {
    // Through the publisher's own port: the restart takes the site's lifecycle lock and fencing.
    const op = await d.siteActions().run({
      accountId: a.accountId,
      projectId: a.projectId,
      action: 'restart',
      operationId: originatedOperationId(a._id),
      initiator: { type: 'agent_tool_execution', id: a._id, objective_id: a.objectiveId },
    });
    return [
      {
        activityId: `operation:${op.operationId}`,
        resourceType: 'site',
        resourceId: a.projectId,
        projectId: a.projectId,
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
    const work = KNOWN_WORK[a.actionKey];
    let set: Partial<AgentActionDoc>;
    try {
      const operations = work ? await work(a, this.d) : [];
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
    if (!a || !a.approval || !(await canAccessProject(a.projectId))) throw notFoundActivity('approval');
    if (WITHHELD_ACTION_KEYS.has(a.actionKey)) {
      throw conflict('decision_withheld', 'decisions on this action are not offered through this endpoint');
    }
    if (p.role !== 'owner') throw forbidden('approval_not_permitted', 'only an owner key can decide approvals');
    if (body.actionHash !== a.actionHash || a.status === 'superseded') {
      throw conflict('action_changed', 'the action hash does not match the action as recorded');
    }
    const now = new Date();
    if (a.approval.status === 'pending') {
      if (a.approval.expiresAt <= now) {
        await this.expire(a, now);
        throw new PlatformError('approval_expired', 410, 'the approval expired before a decision was recorded');
      }
      const approved = body.decision === 'approved';
      const decided = await this.d.models.Action.findOneAndUpdate(
        { _id: a._id, 'approval.status': 'pending', 'approval.expiresAt': { $gt: now } },
        {
          $set: {
            'approval.status': body.decision,
            'approval.decision': body.decision,
            'approval.decidedAt': now,
            'approval.decidedBy': p.keyId,
            'approval.note': body.note ?? null,
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
      if (decided) {
        await this.d.changed?.(decided);
        return approved ? this.continueWork(decided) : decided;
      }
      // Another decision won the race (or it just expired): judge against what is recorded now.
      a = (await this.get(a._id))!;
    }
    const approval = a.approval!;
    if (approval.status === 'expired')
      throw new PlatformError('approval_expired', 410, 'the approval expired before a decision was recorded');
    if (approval.status === 'pending') {
      await this.expire(a, now);
      throw new PlatformError('approval_expired', 410, 'the approval expired before a decision was recorded');
    }
    const recordedNote = (approval as { note?: string | null }).note ?? null;
    if (approval.decision !== body.decision || (body.note != null && body.note !== recordedNote)) {
      throw conflict('decision_conflict', `a different decision (${approval.decision}) is already recorded`);
    }
    return approval.decision === 'approved' ? this.continueWork(a) : a;
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

  /** Settles pending approvals of a project that expired unanswered (reads call it first). */
  async expireDue(accountId: string, projectId: string, now = new Date()): Promise<void> {
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
