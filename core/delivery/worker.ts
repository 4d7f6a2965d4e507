import type { Model } from 'mongoose';
import type { Logger } from '../logger';
import { isDuplicateKey } from '../mongo';
import type { RetrySchedule } from './engine';
import type { DeliveryRecord } from './record';
import { type Claimed, DeliveryRunner, type DeliveryRunnerOptions, type DeliveryStore } from './runner';

export { DRAIN_BATCH, type RecordedAttempt } from './runner';

/** A due delivery as the drain reads it: its id, the lease it is claimed against, and what `hold` asked for. */
export type DueDelivery<D extends DeliveryRecord> = Pick<D, '_id' | 'leaseUntil'> & Partial<D>;

export interface DeliveryWorkerOptions<D extends DeliveryRecord, E> extends Omit<
  DeliveryRunnerOptions<D, E, DueDelivery<D>>,
  'store' | 'paused' | 'concurrency'
> {
  /** Names the loop in its log lines. */
  name: string;
  log: Logger;
  /** The area's delivery records (a schema from `deliverySchema`). */
  model: Model<D>;
  schedule: RetrySchedule;
  /** How long a claim holds; a worker that dies mid-send loses it after this long. */
  leaseMs: number;
  /** Fields of a due delivery `hold` reads, besides `_id` and `leaseUntil`. */
  dueFields?: string[];
}

/**
 * The delivery records of `core/delivery/record.ts` as a store: a claim is a lease (`leaseUntil`),
 * taken with a conditional update on the lease that was read; the result is written under it.
 */
function recordStore<D extends DeliveryRecord>(
  model: Model<D>,
  leaseMs: number,
  dueFields: string[],
): DeliveryStore<D, DueDelivery<D>> {
  /** The model without the area's own fields: the engine's queries touch only the record's. */
  const m = model as unknown as Model<DeliveryRecord>;
  return {
    async due(now, limit) {
      const fields: Record<string, 1> = { _id: 1, leaseUntil: 1 };
      for (const f of dueFields) fields[f] = 1;
      return m
        .find(
          { status: 'pending', $or: [{ nextAttemptAt: { $lte: now }, leaseUntil: null }, { leaseUntil: { $lte: now } }] },
          fields,
        )
        .limit(limit)
        .lean<DueDelivery<D>[]>()
        .exec();
    },
    async claim(due, now) {
      const lease = new Date(now.getTime() + leaseMs);
      const d = await m
        .findOneAndUpdate(
          { _id: due._id, status: 'pending', leaseUntil: due.leaseUntil ?? null },
          { $set: { leaseUntil: lease } },
          { new: true },
        )
        .lean<D>()
        .exec();
      return d ? { d, count: d.attempts.length + 1, fence: lease } : null;
    },
    async record(claimed, recorded, nextAttemptAt, alsoPush) {
      const result = await m.updateOne(
        { _id: claimed.d._id, status: 'pending', leaseUntil: claimed.fence as Date },
        {
          $set: { status: recorded.status, nextAttemptAt, leaseUntil: null, updatedAt: recorded.done },
          $push: { attempts: recorded.attempt, ...alsoPush },
        },
      );
      return result.modifiedCount === 1;
    },
    async nextDueInMs(now) {
      const next = await m
        .findOne({ status: 'pending' }, { nextAttemptAt: 1, leaseUntil: 1 })
        .sort({ nextAttemptAt: 1 })
        .lean<Pick<DeliveryRecord, 'nextAttemptAt' | 'leaseUntil'>>()
        .exec();
      const at = next?.leaseUntil ?? next?.nextAttemptAt;
      return at ? new Date(at).getTime() - now.getTime() : null;
    },
  };
}

/**
 * The kernel's webhook delivery worker (docs/decisions/0230-one-delivery-engine.md): the delivery
 * runner (`./runner.ts`) over an area's delivery records. It claims due deliveries with a lease (a
 * conditional update on the lease read, so of two workers racing exactly one wins), attempts them
 * through the area's `send`, records every attempt and schedules the next by `attemptOutcome`. A
 * claim that lapses (its worker died mid-send) is claimed again, and the same `webhook-id` goes
 * out again.
 */
export class DeliveryWorker<D extends DeliveryRecord, E> extends DeliveryRunner<D, E, DueDelivery<D>> {
  private readonly store: DeliveryStore<D, DueDelivery<D>>;
  /** The model without the area's own fields. */
  private readonly m: Model<DeliveryRecord>;

  constructor(options: DeliveryWorkerOptions<D, E>) {
    const store = recordStore(options.model, options.leaseMs, options.dueFields ?? []);
    super({ ...options, store });
    this.store = store;
    this.m = options.model as unknown as Model<DeliveryRecord>;
  }

  /** Writes a new delivery once: false when one with its id exists (a redelivered event). */
  async createOnce(doc: D): Promise<boolean> {
    try {
      await this.m.create(doc);
      return true;
    } catch (e) {
      if (isDuplicateKey(e)) return false;
      throw e;
    }
  }

  /** Queues another attempt now, whatever the delivery's state (the same `webhook-id` and body); null when none matches. */
  async requeue(filter: { _id: string; accountId: string }, projection: Record<string, 0>): Promise<D | null> {
    const now = new Date(this.now());
    const d = await this.m
      .findOneAndUpdate(
        filter,
        { $set: { status: 'pending', nextAttemptAt: now, leaseUntil: null, updatedAt: now } },
        { new: true, projection },
      )
      .lean<D>()
      .exec();
    if (d) this.nudge();
    return d;
  }

  /** Until the first pending delivery falls due (or its lapsing claim does), in ms; null when none is pending. */
  nextDueInMs(): Promise<number | null> {
    return this.store.nextDueInMs(new Date(this.now()));
  }

  /**
   * Claims delivery `id` if it is still pending under the lease `leaseUntil` that was read (null:
   * unclaimed): of two workers that read the same state, one gets it, the other null.
   */
  async claim(id: string, leaseUntil: Date | null): Promise<{ d: D; lease: Date } | null> {
    const claimed: Claimed<D> | null = await this.store.claim({ _id: id, leaseUntil } as DueDelivery<D>, new Date(this.now()));
    return claimed ? { d: claimed.d, lease: claimed.fence as Date } : null;
  }

  /** One attempt of one delivery: claim, send, record, schedule the next. */
  override attempt(due: DueDelivery<D> | string, leaseUntil: Date | null = null): Promise<void> {
    return super.attempt(typeof due === 'string' ? ({ _id: due, leaseUntil } as DueDelivery<D>) : due);
  }
}
