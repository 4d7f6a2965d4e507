import mongoose, { Schema } from 'mongoose';
import { newId } from '../ids';
import { isDuplicateKey } from '../mongo';
import { childLogger } from '../logger';
import { redactMessage } from '../operations/redact';
import type { BusMessage, EventBus } from './event-bus';
import { currentTraceparent, detached, requestScope } from '../telemetry/tracing';
import { REQUEST_ID_HEADER } from '../telemetry/kafka';

/**
 * The transactional outbox without transactions: an event is embedded in the same document as the
 * state change that causes it and written by the same single-document update, so a process that
 * dies between the database write and the Kafka publish loses nothing. `OutboxRelay` publishes the
 * pending entries later and removes exactly those it published (at-least-once; consumers
 * deduplicate on `eventId`).
 */
export interface OutboxEntry {
  eventId: string;
  topic: string;
  key: string;
  payload: unknown;
  createdAt: Date;
  /** W3C traceparent of the request that caused the event: its publish and consumers join that trace. */
  traceparent?: string;
  requestId?: string;
}

export interface OutboxEvent {
  topic: string;
  key: string;
  payload: unknown;
}

/** A document that carries an outbox. */
export interface WithOutbox {
  outbox: OutboxEntry[];
}

const outboxEntrySchema = new Schema<OutboxEntry>(
  {
    eventId: { type: String, required: true },
    topic: { type: String, required: true },
    key: { type: String, required: true },
    payload: { type: Schema.Types.Mixed },
    createdAt: { type: Date, required: true },
    traceparent: { type: String },
    requestId: { type: String },
  },
  { _id: false, minimize: false },
);

/** The field definition: `new Schema({ ..., outbox: outboxField })`. */
export const outboxField = { type: [outboxEntrySchema], default: () => [] };

/**
 * Finds documents with pending events, oldest first: sparse, so it holds only those documents.
 * An ascending sort on an array field orders by its smallest element, i.e. the oldest pending event
 * (mongo-java-server cannot sort on a positional path such as `outbox.0.createdAt`).
 */
export const OUTBOX_INDEX = { 'outbox.createdAt': 1 } as const;
const PENDING_FILTER = { 'outbox.createdAt': { $exists: true } };

/** Mongoose plugin: adds the `outbox` field (unless declared) and its index. */
export function outboxPlugin(schema: Schema): void {
  if (!schema.path('outbox')) schema.add({ outbox: outboxField });
  schema.index(OUTBOX_INDEX, { sparse: true, name: 'outbox_pending' });
}

/** Entries for `events`, with their ids and times. */
export function outboxEntries(events: OutboxEvent[], now: Date = new Date()): OutboxEntry[] {
  const traceparent = currentTraceparent();
  const requestId = requestScope()?.requestId;
  return events.map((e) => ({
    eventId: newId(),
    topic: e.topic,
    key: e.key,
    payload: e.payload,
    createdAt: now,
    ...(traceparent ? { traceparent } : {}),
    ...(requestId ? { requestId } : {}),
  }));
}

/** The `$push` fragment to merge into a state-changing update: `{ $push: { ...outboxPush(evts) } }`. */
export function outboxPush(events: OutboxEvent[], now: Date = new Date()): { outbox: { $each: OutboxEntry[] } } {
  return { outbox: { $each: outboxEntries(events, now) } };
}

/** What a consumer receives: the payload with the event's id added for deduplication. */
export function outboxMessage(e: OutboxEntry): BusMessage {
  const payload =
    e.payload !== null && typeof e.payload === 'object' && !Array.isArray(e.payload) ? e.payload : { value: e.payload };
  const headers: Record<string, string> = { 'event-id': e.eventId };
  if (e.traceparent) headers.traceparent = e.traceparent;
  if (e.requestId) headers[REQUEST_ID_HEADER] = e.requestId;
  return { topic: e.topic, key: e.key, value: { ...payload, eventId: e.eventId }, headers };
}

// Accepts any model whose documents carry an outbox; mongoose models are invariant in their type.

type AnyModel = mongoose.Model<any>;

export interface OutboxRelayOptions {
  models: AnyModel[];
  bus: EventBus;
  /** Pause between idle scans, in milliseconds: 100. */
  intervalMs?: number;
  /** Documents read per model and scan: 100. */
  batchSize?: number;
  /** Longest pause after repeated publish failures, in milliseconds: 5 s. */
  maxBackoffMs?: number;
  /** How long a relay holds the right to scan these collections, in milliseconds: 5 s. */
  leaseMs?: number;
}

/** Where relays record who scans which collections (one small document per relay set). */
export const RELAY_LEASES = 'kernel_outbox_relay_leases';

interface PendingDoc {
  /** Whatever the model's id type is (a string for most, an ObjectId for some). */
  _id: string | mongoose.Types.ObjectId;
  outbox: OutboxEntry[];
}

/**
 * Merges the documents' event lists into one publish order: each document's events stay in push
 * order, and across documents the oldest pending event goes first.
 */
function mergeByTime(docs: PendingDoc[]): OutboxEntry[] {
  const heads = docs.map(() => 0);
  const out: OutboxEntry[] = [];
  for (;;) {
    let best = -1;
    for (let i = 0; i < docs.length; i++) {
      const e = docs[i].outbox[heads[i]];
      if (!e) continue;
      if (best < 0 || new Date(e.createdAt).getTime() < new Date(docs[best].outbox[heads[best]].createdAt).getTime()) best = i;
    }
    if (best < 0) return out;
    out.push(docs[best].outbox[heads[best]++]);
  }
}

export class OutboxRelay {
  private readonly models: AnyModel[];
  private readonly bus: EventBus;
  private readonly intervalMs: number;
  private readonly batchSize: number;
  private readonly maxBackoffMs: number;
  private readonly log = childLogger('outbox');
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private flushing: Promise<number> | undefined;
  /** The tick under way (lease, then scan), so `stop` can wait for all of it, not only the scan. */
  private ticking: Promise<void> | undefined;
  private again = false;
  private failures = 0;
  private readonly leaseMs: number;
  /** The relay set: every process relaying the same collections competes for this one lease. */
  private readonly leaseId: string;
  private readonly holder = newId();
  /** When the lease this relay last took or renewed lapses (by its own clock); 0 when not held. */
  private heldUntil = 0;

  constructor(opts: OutboxRelayOptions) {
    this.models = opts.models;
    this.bus = opts.bus;
    this.intervalMs = opts.intervalMs ?? 100;
    this.batchSize = opts.batchSize ?? 100;
    this.maxBackoffMs = opts.maxBackoffMs ?? 5000;
    this.leaseMs = opts.leaseMs ?? 5_000;
    this.leaseId = `outbox:${this.models.map((m) => m.collection.collectionName).join(',')}`;
  }

  /**
   * Takes or renews the lease on this relay set: one conditional upsert on the lease's `_id`. Held
   * by another live relay → the filter misses and the upsert's insert collides on `_id` (false).
   * With one relay scanning at a time, processes do not race to publish the same entries (each
   * duplicate would still be harmless, consumers deduplicate on `eventId`, but it doubles the load
   * on the broker and the database for nothing). A relay that dies lets its lease lapse. Clocks
   * that disagree can only let two relays overlap for a while, which costs duplicates, never events.
   */
  private async holdLease(): Promise<boolean> {
    const now = Date.now();
    // Held with more than half of it left: nobody else can take it before it lapses, so the
    // round trip is skipped (a busy relay ticks on every write's nudge; renewing each time was a
    // command per write for nothing).
    if (now < this.heldUntil - this.leaseMs / 2) return true;
    const leases = this.models[0].db.collection<{ _id: string; holder: string; until: Date }>(RELAY_LEASES);
    try {
      await leases.findOneAndUpdate(
        { _id: this.leaseId, $or: [{ holder: this.holder }, { until: { $lt: new Date(now) } }] },
        { $set: { holder: this.holder, until: new Date(now + this.leaseMs) } },
        { upsert: true },
      );
      this.heldUntil = now + this.leaseMs;
      return true;
    } catch (e) {
      this.heldUntil = 0;
      if (isDuplicateKey(e)) return false;
      throw e;
    }
  }

  /** Gives the lease up at once, so another process's relay takes over without waiting it out. */
  private async releaseLease(): Promise<void> {
    this.heldUntil = 0;
    const leases = this.models[0].db.collection<{ _id: string; holder: string; until: Date }>(RELAY_LEASES);
    await leases.updateOne({ _id: this.leaseId, holder: this.holder }, { $set: { until: new Date(0) } }).catch(() => undefined);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.schedule(0);
  }

  /** Stops scanning and waits for a scan in progress. Pending events stay in their documents. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    // A tick may be between taking the lease and scanning: wait for it whole, or it would scan
    // (and publish) after `stop` returned.
    await this.ticking?.catch(() => undefined);
    await this.flushing?.catch(() => undefined);
    await this.releaseLease();
  }

  /** Flushes now instead of at the next tick (after an in-process write, to keep latency low). */
  nudge(): void {
    if (!this.running) return;
    if (this.flushing) {
      this.again = true;
      return;
    }
    if (this.failures > 0) return; // backing off: the broker is unwell
    this.schedule(0);
  }

  private schedule(ms: number): void {
    if (!this.running) return;
    if (this.timer) clearTimeout(this.timer);
    // Relay scans belong to no request (each event carries its own trace context).
    this.timer = setTimeout(
      detached(() => {
        const tick = this.tick();
        this.ticking = tick;
        void tick.finally(() => {
          if (this.ticking === tick) this.ticking = undefined;
        });
      }),
      ms,
    );
  }

  private async tick(): Promise<void> {
    this.timer = undefined;
    try {
      // Another process's relay scans these collections now: wait, and take over if it lapses.
      if (!(await this.holdLease())) return this.schedule(this.intervalMs);
      if (!this.running) return; // stopped while taking the lease
      await this.flushOnce();
      this.failures = 0;
    } catch (e) {
      this.failures++;
      this.log.warn({ err: redactMessage(e), failures: this.failures }, 'outbox publish failed; will retry');
    }
    const again = this.again;
    this.again = false;
    const backoff = this.failures > 0 ? Math.min(this.maxBackoffMs, this.intervalMs * 2 ** this.failures) : this.intervalMs;
    this.schedule(again && this.failures === 0 ? 0 : backoff);
  }

  /**
   * One scan: publishes every pending event found (up to a batch per model and round) and removes
   * exactly the published entries. Returns how many were published; throws if publishing failed,
   * leaving those entries in place.
   */
  flushOnce(): Promise<number> {
    if (this.flushing) {
      // A scan is under way: run another right after it, so callers see their writes flushed.
      return this.flushing.then(
        () => this.flushOnce(),
        () => this.flushOnce(),
      );
    }
    const run = (async () => {
      let total = 0;
      for (const model of this.models) total += await this.flushModel(model);
      return total;
    })();
    this.flushing = run;
    const clear = () => {
      if (this.flushing === run) this.flushing = undefined;
    };
    run.then(clear, clear);
    return run;
  }

  private async flushModel(model: AnyModel): Promise<number> {
    let total = 0;
    // A bounded number of rounds per scan, so one busy model does not starve the others.
    for (let round = 0; round < 10; round++) {
      const docs = await model
        .find(PENDING_FILTER, { outbox: 1 })
        .sort(OUTBOX_INDEX)
        .limit(this.batchSize)
        .lean<PendingDoc[]>()
        .exec();
      const pending = docs.filter((d) => Array.isArray(d.outbox) && d.outbox.length > 0);
      if (pending.length === 0) break;
      const ordered = mergeByTime(pending);
      await this.bus.publish(ordered.map(outboxMessage));
      // One `update` command for the whole batch (a statement per document), not one per document.
      // Each statement pulls exactly the entries published, so entries pushed since the read stay.
      const docsOf = model.collection as unknown as mongoose.mongo.Collection<PendingDoc>;
      await docsOf.bulkWrite(
        pending.map((d) => ({
          updateOne: {
            filter: { _id: d._id },
            update: { $pull: { outbox: { eventId: { $in: d.outbox.map((e) => e.eventId) } } } },
          },
        })),
        { ordered: false },
      );
      total += ordered.length;
      if (docs.length < this.batchSize) break;
    }
    return total;
  }
}
