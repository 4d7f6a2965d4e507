import type { Model } from 'mongoose';
import { DueWorkLoop } from '../due-work-loop';
import type { Logger } from '../logger';
import { isDuplicateKey } from '../mongo';
import { attemptOutcome, type DeliveryStatus, type RetrySchedule } from './engine';
import type { DeliveryAttempt, DeliveryRecord } from './record';

/** Deliveries one round claims at the most. */
export const DRAIN_BATCH = 20;

/** A due delivery as the drain reads it: its id, the lease it is claimed against, and what `hold` asked for. */
export type DueDelivery<D extends DeliveryRecord> = Pick<D, '_id' | 'leaseUntil'> & Partial<D>;

/** What one attempt led to, as the record of it was written. */
export interface RecordedAttempt {
  ok: boolean;
  status: DeliveryStatus;
  /** 1-based number of this attempt. */
  count: number;
  attempt: DeliveryAttempt;
  done: Date;
}

export interface DeliveryWorkerOptions<D extends DeliveryRecord, E> {
  /** Names the loop in its log lines. */
  name: string;
  log: Logger;
  /** The area's delivery records (a schema from `deliverySchema`). */
  model: Model<D>;
  schedule: RetrySchedule;
  /** How long a claim holds; a worker that dies mid-send loses it after this long. */
  leaseMs: number;
  /** The longest wait between rounds. */
  pollMs: number;
  /** The endpoint a delivery goes to, or null when it was deleted (the delivery then fails). */
  endpoint(d: D): Promise<E | null>;
  /** Signs and sends one attempt; a failure is an attempt with an error, never a throw. */
  send(endpoint: E, d: D): Promise<DeliveryAttempt>;
  /** Fields of a due delivery `hold` reads, besides `_id` and `leaseUntil`. */
  dueFields?: string[];
  /** Of the due deliveries, those to attempt now; it puts off the others itself (Assets: one asset's in order). */
  hold?(due: DueDelivery<D>[], now: Date): Promise<DueDelivery<D>[]>;
  /** More to `$push` with the attempt's record, in the same write (mail: the delivery's event into its outbox). */
  alsoPush?(d: D, recorded: RecordedAttempt): Record<string, unknown>;
  /** A delivery ended, succeeded or failed for good (Assets: the next one of its asset may go). */
  ended?(d: D): Promise<void>;
}

/**
 * The kernel's webhook delivery worker (docs/decisions/0230-one-delivery-engine.md): over an area's
 * delivery records it claims due deliveries with a lease (a conditional update on the lease read,
 * so of two workers racing exactly one wins), attempts them through the area's `send`, records
 * every attempt and schedules the next by `attemptOutcome`. A claim that lapses (its worker died
 * mid-send) is claimed again, and the same `webhook-id` goes out again. Runs on `DueWorkLoop`.
 */
export class DeliveryWorker<D extends DeliveryRecord, E> {
  private readonly loop: DueWorkLoop;
  /** The model without the area's own fields: the engine's queries touch only the record's. */
  private readonly m: Model<DeliveryRecord>;

  constructor(private readonly opts: DeliveryWorkerOptions<D, E>) {
    this.m = opts.model as unknown as Model<DeliveryRecord>;
    this.loop = new DueWorkLoop({
      name: opts.name,
      log: opts.log,
      pollMs: opts.pollMs,
      drain: () => this.drain(),
      nextDueInMs: () => this.nextDueInMs(),
    });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** New work was written in this process: run a round now. */
  nudge(): void {
    this.loop.nudge();
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
    const now = new Date();
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

  /** Claims and attempts up to `DRAIN_BATCH` due deliveries (due, or claimed by a worker whose lease lapsed); false when none was. */
  async drain(): Promise<boolean> {
    const now = new Date();
    const fields: Record<string, 1> = { _id: 1, leaseUntil: 1 };
    for (const f of this.opts.dueFields ?? []) fields[f] = 1;
    const due = await this.m
      .find(
        { status: 'pending', $or: [{ nextAttemptAt: { $lte: now }, leaseUntil: null }, { leaseUntil: { $lte: now } }] },
        fields,
      )
      .limit(DRAIN_BATCH)
      .lean<DueDelivery<D>[]>()
      .exec();
    const ready = this.opts.hold ? await this.opts.hold(due, now) : due;
    await Promise.all(ready.map((d) => this.attempt(d._id, d.leaseUntil ?? null)));
    return ready.length > 0;
  }

  /** Until the first pending delivery falls due (or its lapsing claim does), in ms; null when none is pending. */
  async nextDueInMs(): Promise<number | null> {
    const next = await this.m
      .findOne({ status: 'pending' }, { nextAttemptAt: 1, leaseUntil: 1 })
      .sort({ nextAttemptAt: 1 })
      .lean<Pick<DeliveryRecord, 'nextAttemptAt' | 'leaseUntil'>>()
      .exec();
    const at = next?.leaseUntil ?? next?.nextAttemptAt;
    return at ? new Date(at).getTime() - Date.now() : null;
  }

  /**
   * Claims delivery `id` if it is still pending under the lease `leaseUntil` that was read (null:
   * unclaimed): of two workers that read the same state, one gets it, the other null.
   */
  async claim(id: string, leaseUntil: Date | null): Promise<{ d: D; lease: Date } | null> {
    const lease = new Date(Date.now() + this.opts.leaseMs);
    const d = await this.m
      .findOneAndUpdate({ _id: id, status: 'pending', leaseUntil }, { $set: { leaseUntil: lease } }, { new: true })
      .lean<D>()
      .exec();
    return d ? { d, lease } : null;
  }

  /** One attempt of one delivery: claim, send, record, schedule the next. */
  async attempt(id: string, leaseUntil: Date | null): Promise<void> {
    const claimed = await this.claim(id, leaseUntil);
    if (!claimed) return;
    const { d, lease } = claimed;
    const endpoint = await this.opts.endpoint(d);
    const attempt: DeliveryAttempt =
      endpoint !== null
        ? await this.opts.send(endpoint, d)
        : { statusCode: null, durationMs: 0, at: new Date(), responseExcerpt: null, error: 'the webhook was deleted' };
    const done = new Date();
    const count = d.attempts.length + 1;
    const { ok, status, nextAttemptAt } = attemptOutcome(attempt.statusCode, count, this.opts.schedule, endpoint === null, done);
    const recorded = await this.m.updateOne(
      { _id: id, status: 'pending', leaseUntil: lease },
      {
        $set: { status, nextAttemptAt, leaseUntil: null, updatedAt: done },
        $push: { attempts: attempt, ...(this.opts.alsoPush?.(d, { ok, status, count, attempt, done }) ?? {}) },
      },
    );
    if (recorded.modifiedCount === 1 && status !== 'pending') await this.opts.ended?.(d);
  }
}
