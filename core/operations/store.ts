import type { UpdateQuery } from 'mongoose';
import { outboxEntries, outboxPush, type OutboxEvent } from '../events/outbox';
import { redactMessage } from './redact';
import { STEP_COMPLETED, type OperationDoc, type OperationModel, type OperationStatus, type OperationStep } from './model';

/** What a consumer of the operations topic receives (plus `eventId`, added by the relay). */
export interface OperationEvent {
  id: string;
  accountId: string;
  projectId: string;
  resourceType: string;
  resourceId: string;
  operationType: string;
  status: OperationStatus;
  step: string;
  errorCode: string | null;
  /** ISO 8601. */
  updatedAt: string;
  /**
   * Who started the operation (null: nobody named), on the enqueue event only (it never changes, so
   * later events leave it out): a consumer that projects the operation needs no read of it.
   */
  initiator?: unknown;
}

/** The identity of an operation, as events need it (immutable after enqueue). */
export type OperationRef = Pick<
  OperationDoc,
  '_id' | 'accountId' | 'projectId' | 'resourceType' | 'resourceId' | 'operationType'
>;

/** A claim: every write of its holder is conditional on this owner and token. */
export interface Fence {
  id: string;
  owner: string;
  token: number;
}

/** Fields a claim candidate is read with. */
export const CANDIDATE_FIELDS = {
  accountId: 1,
  projectId: 1,
  resourceType: 1,
  resourceId: 1,
  operationType: 1,
  status: 1,
  step: 1,
  lease: 1,
  attempt: 1,
  maxAttempts: 1,
  startedAt: 1,
  runAfter: 1,
} as const;

export type Candidate = OperationRef &
  Pick<OperationDoc, 'status' | 'step' | 'lease' | 'attempt' | 'maxAttempts' | 'startedAt' | 'runAfter'>;

/**
 * The keys of the claim's compare-and-swap. A unique index on exactly these keys (model.ts) lets
 * the MongoDB-wire server find the document by index instead of scanning the collection under its
 * lock (decision 0015). Every write that could make a read candidate unclaimable changes one of
 * them: a claim bumps `lease.token`, a heartbeat moves `lease.until`, a retry, completion or failure
 * changes `status`, a new step changes `step`.
 */
export const CLAIM_CAS_KEYS = ['_id', 'status', 'step', 'lease.token', 'lease.until'] as const;

/** The keys of a holder's fenced writes, likewise matched by a unique index. */
export const FENCE_KEYS = ['_id', 'lease.owner', 'lease.token'] as const;

/** Whether a candidate, as read, is due and held by nobody at `now`. */
export function claimable(c: Candidate, now: Date): boolean {
  const until = c.lease?.until ?? null;
  return (c.runAfter == null || c.runAfter <= now) && (until === null || until < now);
}

/**
 * The operation's conditional writes. Each is one single-document update that changes the state
 * and pushes the event it causes into the document's outbox, so the two never part ways.
 */
export class OperationStore {
  constructor(
    readonly model: OperationModel,
    readonly topic: string,
  ) {}

  event(
    op: OperationRef,
    status: OperationStatus,
    step: string,
    errorCode: string | null,
    updatedAt: Date,
    initiator?: unknown,
  ): OutboxEvent {
    const payload: OperationEvent = {
      id: op._id,
      accountId: op.accountId,
      projectId: op.projectId,
      resourceType: op.resourceType,
      resourceId: op.resourceId,
      operationType: op.operationType,
      status,
      step,
      errorCode,
      updatedAt: updatedAt.toISOString(),
      ...(initiator !== undefined ? { initiator } : {}),
    };
    return { topic: this.topic, key: op.projectId, payload };
  }

  /** A new document, carrying its `pending/queued` event. */
  newDocument(fields: Omit<OperationDoc, 'outbox'>): OperationDoc {
    return {
      ...fields,
      outbox: outboxEntries(
        [this.event(fields, fields.status, fields.step, null, fields.updatedAt, fields.initiator ?? null)],
        fields.updatedAt,
      ),
    };
  }

  /** Due operations nobody holds, oldest first. */
  async candidates(types: string[], now: Date, limit: number): Promise<Candidate[]> {
    return (await this.model
      .find(
        {
          status: { $in: ['pending', 'running'] },
          runAfter: { $lte: now },
          operationType: { $in: types },
          $or: [{ 'lease.until': null }, { 'lease.until': { $lt: now } }],
        },
        CANDIDATE_FIELDS,
      )
      .sort({ runAfter: 1 })
      .limit(limit)
      .lean()
      .exec()) as Candidate[];
  }

  /**
   * Matches `c` only if nobody claimed or changed it since it was read: exact values of
   * CLAIM_CAS_KEYS, no range or `$or` (those would scan). Whether it was free is decided on the
   * values read (`claimable`); the equality makes that decision still hold at the write.
   */
  private unchanged(c: Candidate) {
    return {
      _id: c._id,
      status: c.status,
      step: c.step,
      'lease.token': c.lease?.token ?? 0,
      'lease.until': c.lease?.until ?? null,
    };
  }

  /** Atomically takes `c` for `owner` until `now + leaseMs`; null when another worker won. */
  async claim(c: Candidate, owner: string, leaseMs: number, now: Date): Promise<OperationDoc | null> {
    if (!claimable(c, now)) return null;
    const update: UpdateQuery<OperationDoc> = {
      $set: {
        status: 'running',
        'lease.owner': owner,
        'lease.until': new Date(now.getTime() + leaseMs),
        heartbeatAt: now,
        updatedAt: now,
        startedAt: c.startedAt ?? now,
      },
      $inc: { 'lease.token': 1, attempt: 1 },
    };
    if (c.status !== 'running') update.$push = outboxPush([this.event(c, 'running', c.step, null, now)], now);
    return this.model.findOneAndUpdate(this.unchanged(c), update, { new: true }).lean<OperationDoc>().exec();
  }

  /** Ends an operation whose workers keep dying (every claim expired) as failed. */
  async abandon(c: Candidate, code: string, message: string, now: Date): Promise<boolean> {
    if (!claimable(c, now)) return false;
    const res = await this.model.updateOne(this.unchanged(c), {
      $set: failedFields(code, message, now),
      $push: outboxPush([this.event(c, 'failed', c.step, code, now)], now),
    });
    return res.modifiedCount === 1;
  }

  private fenced(f: Fence) {
    return { _id: f.id, 'lease.owner': f.owner, 'lease.token': f.token };
  }

  /** A write conditional on the fence; false when the lease was lost. */
  async write(f: Fence, update: UpdateQuery<OperationDoc>): Promise<boolean> {
    const res = await this.model.updateOne(this.fenced(f), update);
    return res.matchedCount === 1;
  }

  async heartbeat(f: Fence, leaseMs: number): Promise<boolean> {
    const now = new Date();
    return this.write(f, { $set: { 'lease.until': new Date(now.getTime() + leaseMs), heartbeatAt: now } });
  }

  /** Starts step `index` (appending it when `isNew`); pushes an event when the `step` changes. */
  async stepStarted(
    f: Fence,
    op: OperationRef,
    index: number,
    step: OperationStep,
    isNew: boolean,
    emit: boolean,
    now: Date,
  ): Promise<boolean> {
    const update: UpdateQuery<OperationDoc> = { $set: { step: step.id, updatedAt: now } };
    const push: Record<string, unknown> = {};
    if (isNew) push.steps = step;
    else {
      Object.assign(update.$set as object, {
        [`steps.${index}.status`]: 'running',
        [`steps.${index}.startedAt`]: now,
        [`steps.${index}.finishedAt`]: null,
        [`steps.${index}.detail`]: null,
        [`steps.${index}.attempts`]: step.attempts,
      });
    }
    if (emit) Object.assign(push, outboxPush([this.event(op, 'running', step.id, null, now)], now));
    if (Object.keys(push).length > 0) update.$push = push;
    return this.write(f, update);
  }

  /** The running step's progress line (`steps.N.detail`). */
  async stepProgress(f: Fence, index: number, detail: string): Promise<boolean> {
    return this.write(f, { $set: { [`steps.${index}.detail`]: detail, updatedAt: new Date() } });
  }

  async stepFinished(
    f: Fence,
    index: number,
    status: 'completed' | 'failed',
    result: unknown,
    detail: string | null,
    now: Date,
  ): Promise<boolean> {
    return this.write(f, {
      $set: {
        [`steps.${index}.status`]: status,
        [`steps.${index}.finishedAt`]: now,
        [`steps.${index}.result`]: result,
        [`steps.${index}.detail`]: detail,
        updatedAt: now,
      },
    });
  }

  /** The one completion of an operation: refused (false) for a worker that lost its lease. */
  async complete(f: Fence, op: OperationRef, result: unknown, now: Date = new Date()): Promise<boolean> {
    return this.write(f, {
      $set: {
        status: 'completed',
        step: STEP_COMPLETED,
        result: result === undefined ? null : result,
        errorCode: null,
        errorMessage: null,
        finishedAt: now,
        updatedAt: now,
        'lease.owner': null,
        'lease.until': null,
      },
      $push: outboxPush([this.event(op, 'completed', STEP_COMPLETED, null, now)], now),
    });
  }

  /** Back to pending, due at `runAfter`, keeping the error for readers; completed steps stay done. */
  async retry(
    f: Fence,
    op: OperationRef,
    step: string,
    code: string,
    message: string,
    runAfter: Date,
    now: Date = new Date(),
  ): Promise<boolean> {
    return this.write(f, {
      $set: {
        status: 'pending',
        runAfter,
        errorCode: code,
        errorMessage: redactMessage(message),
        updatedAt: now,
        'lease.owner': null,
        'lease.until': null,
      },
      $push: outboxPush([this.event(op, 'pending', step, code, now)], now),
    });
  }

  async fail(f: Fence, op: OperationRef, step: string, code: string, message: string, now: Date = new Date()): Promise<boolean> {
    return this.write(f, {
      $set: failedFields(code, message, now),
      $push: outboxPush([this.event(op, 'failed', step, code, now)], now),
    });
  }

  /** Gives the operation back (still running) so another worker resumes it at once. */
  async release(f: Fence): Promise<boolean> {
    return this.write(f, { $set: { 'lease.owner': null, 'lease.until': null } });
  }
}

/** What a failed operation records: the code, a redacted message, and no lease. */
function failedFields(code: string, message: string, now: Date) {
  return {
    status: 'failed' as const,
    errorCode: code,
    errorMessage: redactMessage(message),
    finishedAt: now,
    updatedAt: now,
    'lease.owner': null,
    'lease.until': null,
  };
}
