import type { BackgroundWorker } from '../../core/area';
import { childLogger } from '../../core/logger';
import { DueWorkLoop } from '../../core/due-work-loop';
import type { AttemptDoc, DeliveryDoc, DeliveryStatus, ObjstoreModels } from './model';
import { parseAllowHosts, postPinned, resolveTarget } from '../../core/outbound-http';
import { type ObjstoreSettings, PUSH_MAX_FAILURES, RESPONSE_EXCERPT_BYTES, pushBackoffMs } from './settings';
import { DELIVERY_ID_HEADER, EVENT_ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, signPush } from './signing';
import type { Subscriptions } from './subscriptions';

/** A send holds its delivery this long past the request timeout; a worker that dies frees it then. */
const SEND_LEASE_SLACK_MS = 30_000;
/**
 * How long a send may use a subscription as read (secret, url, enabled): 1 s. Spec 6.1 lets an
 * in-flight request carry the old signature after a rotation; this widens "in flight" by a second.
 */
const SUBSCRIPTION_CACHE_MS = 1000;

/**
 * Sends push deliveries (spec 3.4, 6.1). Each tick reads due deliveries, takes each with a
 * conditional update on `{_id, claimSeq}` (a send lease: another worker skips it, a dead worker's
 * lease runs out), signs and POSTs `{id, type, data}`, and records the attempt with the next state:
 * 2xx → `delivered`; otherwise `pending` again after 30 s, 60 s, … capped at 1 h, and `exhausted` at
 * the tenth failure. A paused subscription's deliveries are parked (no `visibleAt`) until resumed.
 */
export class PushWorker implements BackgroundWorker {
  readonly name = 'objstore-push';
  private readonly log = childLogger('objstore-push');
  private readonly allowHosts: Set<string>;
  private readonly inFlight = new Set<Promise<void>>();
  /** The kernel's due-work loop: rounds never overlap, a full scan goes again at once, a nudge wakes it. */
  private readonly loop: DueWorkLoop;

  constructor(
    private readonly models: ObjstoreModels,
    private readonly subscriptions: Subscriptions,
    private readonly settings: ObjstoreSettings,
    private readonly now: () => number = Date.now,
  ) {
    this.allowHosts = parseAllowHosts(settings.OUTBOUND_ALLOW_HOSTS);
    this.loop = new DueWorkLoop({
      name: 'objstore-push',
      log: this.log,
      pollMs: settings.OBJSTORE_PUSH_POLL_MS,
      drain: () => this.tick(),
      // Retries fall due by `visibleAt`; the poll finds them (a nudge finds new ones at once).
      nextDueInMs: async () => null,
    });
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    await Promise.allSettled([...this.inFlight]);
  }

  /** Scans now instead of at the next tick (new deliveries, a replay, a resume). */
  nudge(): void {
    this.loop.nudge();
  }

  /** One scan: starts sends for due deliveries while there is room. Returns true when it filled up. */
  async tick(): Promise<boolean> {
    const room = this.settings.OBJSTORE_PUSH_CONCURRENCY - this.inFlight.size;
    if (room <= 0) return false;
    const due = await this.models.Delivery.find(
      { deliveryMode: 'push', visibleAt: { $lte: new Date(this.now()) } },
      { _id: 1, claimSeq: 1 },
    )
      // No sort: the wire server then stops scanning at `room` matches instead of reading and sorting
      // every due delivery (roughly arrival order; retries interleave).
      .limit(room)
      .lean();
    for (const c of due) {
      const taken = await this.take(c._id, c.claimSeq);
      if (!taken) continue;
      const p: Promise<void> = this.send(taken)
        .catch((e) => this.log.warn({ err: String(e), delivery: taken._id }, 'push send failed unexpectedly'))
        .finally(() => {
          this.inFlight.delete(p);
          // Rescan once half the slots are free, not after every send: each scan reads the collection.
          if (this.inFlight.size <= this.settings.OBJSTORE_PUSH_CONCURRENCY / 2) this.nudge();
        });
      this.inFlight.add(p);
    }
    return due.length === room;
  }

  /** Runs scans until nothing is due and nothing is in flight (tests and benchmarks). */
  async drain(): Promise<void> {
    for (;;) {
      await this.tick();
      if (this.inFlight.size === 0) {
        const due = await this.models.Delivery.countDocuments({
          deliveryMode: 'push',
          visibleAt: { $lte: new Date(this.now()) },
        });
        if (due === 0) return;
      } else {
        await Promise.allSettled([...this.inFlight]);
      }
    }
  }

  private async take(id: string, claimSeq: number): Promise<DeliveryDoc | null> {
    const now = this.now();
    return this.models.Delivery.findOneAndUpdate(
      { _id: id, claimSeq },
      {
        $set: {
          visibleAt: new Date(now + this.settings.OBJSTORE_PUSH_TIMEOUT_MS + SEND_LEASE_SLACK_MS),
          updatedAt: new Date(now),
        },
        $inc: { claimSeq: 1 },
      },
      { new: true },
    ).lean();
  }

  /** Subscriptions read for sends, kept for a second: a rotation or pause applies within 1 s. */
  private readonly subCache = new Map<
    string,
    { at: number; value: Promise<Awaited<ReturnType<Subscriptions['signingSecret']>>> }
  >();

  private subscription(id: string, fresh = false) {
    const hit = this.subCache.get(id);
    const now = this.now();
    if (hit && !fresh && now - hit.at < SUBSCRIPTION_CACHE_MS) return hit.value;
    if (this.subCache.size > 1000) this.subCache.clear();
    const value = this.subscriptions.signingSecret(id);
    this.subCache.set(id, { at: now, value });
    return value;
  }

  private async send(d: DeliveryDoc): Promise<void> {
    let found = await this.subscription(d.subscriptionId);
    // Parking on a stale "paused" would strand a delivery a resume just freed: read again first.
    if (!found || !found.sub.enabled) found = await this.subscription(d.subscriptionId, true);
    if (!found) return; // deleted with its deliveries
    const { sub, secret } = found;
    if (!sub.enabled) {
      await this.models.Delivery.updateOne(
        { _id: d._id, claimSeq: d.claimSeq },
        { $set: { visibleAt: null }, $inc: { claimSeq: 1 } },
      );
      return;
    }
    const rawBody = JSON.stringify({ id: d.eventId, type: d.eventType, data: d.data });
    const started = this.now();
    const attempt: AttemptDoc = { statusCode: null, durationMs: 0, at: new Date(started), responseExcerpt: null, error: null };
    let ok = false;
    try {
      const target = await resolveTarget(sub.url ?? '', this.allowHosts);
      if (!target) throw new Error('host does not resolve');
      const timestamp = Math.floor(started / 1000);
      const res = await postPinned(
        target,
        rawBody,
        {
          [DELIVERY_ID_HEADER]: d._id,
          [EVENT_ID_HEADER]: d.eventId,
          [TIMESTAMP_HEADER]: String(timestamp),
          [SIGNATURE_HEADER]: signPush(secret, timestamp, rawBody),
          'user-agent': 'platform-objstore-push/1',
        },
        { timeoutMs: this.settings.OBJSTORE_PUSH_TIMEOUT_MS, maxExcerptBytes: RESPONSE_EXCERPT_BYTES },
      );
      attempt.statusCode = res.statusCode;
      attempt.responseExcerpt = res.excerpt;
      ok = res.statusCode >= 200 && res.statusCode < 300;
      if (res.statusCode >= 300 && res.statusCode < 400) attempt.error = 'redirects are not followed';
    } catch (e) {
      attempt.error = e instanceof Error ? e.message : String(e);
    }
    attempt.durationMs = this.now() - started;
    await this.record(d, attempt, ok);
  }

  private async record(d: DeliveryDoc, attempt: AttemptDoc, ok: boolean): Promise<void> {
    // The next attempt is due exactly one backoff after this attempt ended.
    const now = attempt.at.getTime() + attempt.durationMs;
    const failures = ok ? d.failures : d.failures + 1;
    const status: DeliveryStatus = ok ? 'delivered' : failures >= PUSH_MAX_FAILURES ? 'exhausted' : 'pending';
    const visibleAt =
      status === 'pending'
        ? new Date(
            now +
              pushBackoffMs(failures, this.settings.OBJSTORE_PUSH_BACKOFF_BASE_MS, this.settings.OBJSTORE_PUSH_BACKOFF_CAP_MS),
          )
        : null;
    await this.models.Delivery.updateOne(
      { _id: d._id, claimSeq: d.claimSeq },
      {
        $set: { status, failures, visibleAt, completedAt: status === 'pending' ? null : new Date(now), updatedAt: new Date(now) },
        $push: { attempts: attempt },
        $inc: { claimSeq: 1 },
      },
    );
  }
}
