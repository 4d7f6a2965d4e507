import type { BackgroundWorker } from '../../core/area';
import { childLogger } from '../../core/logger';
import type { DeliveryAttempt } from '../../core/delivery/record';
import { DeliveryRunner, type DeliveryStore } from '../../core/delivery/runner';
import type { DeliveryDoc, DeliveryStatus, ObjstoreModels } from './model';
import { parseAllowHosts, postPinned, resolveTarget } from '../../core/outbound-http';
import { type ObjstoreSettings, PUSH_MAX_FAILURES, RESPONSE_EXCERPT_BYTES } from './settings';
import { DELIVERY_ID_HEADER, EVENT_ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, signPush } from './signing';
import type { Subscriptions } from './subscriptions';

/** A send holds its delivery this long past the request timeout; a worker that dies frees it then. */
const SEND_LEASE_SLACK_MS = 30_000;
/**
 * How long a send may use a subscription as read (secret, url, enabled): 1 s. Spec 6.1 lets an
 * in-flight request carry the old signature after a rotation; this widens "in flight" by a second.
 */
const SUBSCRIPTION_CACHE_MS = 1000;

type PushEndpoint = NonNullable<Awaited<ReturnType<Subscriptions['signingSecret']>>>;
type DueRef = Pick<DeliveryDoc, '_id' | 'claimSeq'>;

/** The kernel's outcome in the object store's words (spec 3.4: `delivered`, `exhausted`). */
const STATUS: Record<'pending' | 'succeeded' | 'failed', DeliveryStatus> = {
  pending: 'pending',
  succeeded: 'delivered',
  failed: 'exhausted',
};

/**
 * Push deliveries as a kernel delivery store. They share `objstore_deliveries` with the pull queue,
 * whose fencing they follow (docs/decisions/0070-objstore-delivery-queue.md): every write is a
 * conditional update on `{_id, claimSeq}` (an exact unique index) that increments `claimSeq`, and
 * `visibleAt` is both when a delivery is due and when a send's claim lapses (the request timeout
 * plus 30 s). The attempt number is `failures + 1`: a replay counts failures afresh.
 */
function pushStore(models: ObjstoreModels, settings: ObjstoreSettings): DeliveryStore<DeliveryDoc, DueRef> {
  const Delivery = models.Delivery;
  return {
    async due(now, limit) {
      // No sort: the wire server then stops scanning at `limit` matches instead of reading and sorting
      // every due delivery (roughly arrival order; retries interleave).
      return Delivery.find({ deliveryMode: 'push', visibleAt: { $lte: now } }, { _id: 1, claimSeq: 1 })
        .limit(limit)
        .lean<DueRef[]>();
    },
    async claim(due, now) {
      const lease = new Date(now.getTime() + settings.OBJSTORE_PUSH_TIMEOUT_MS + SEND_LEASE_SLACK_MS);
      const d = await Delivery.findOneAndUpdate(
        { _id: due._id, claimSeq: due.claimSeq },
        { $set: { visibleAt: lease, updatedAt: now }, $inc: { claimSeq: 1 } },
        { new: true },
      ).lean();
      return d ? { d, count: d.failures + 1, fence: d.claimSeq } : null;
    },
    async record({ d, fence }, { ok, status, attempt, done }, nextAttemptAt) {
      const result = await Delivery.updateOne(
        { _id: d._id, claimSeq: fence as number },
        {
          $set: {
            status: STATUS[status],
            failures: ok ? d.failures : d.failures + 1,
            visibleAt: nextAttemptAt,
            completedAt: status === 'pending' ? null : done,
            updatedAt: done,
          },
          $push: { attempts: attempt },
          $inc: { claimSeq: 1 },
        },
      );
      return result.modifiedCount === 1;
    },
    // Retries fall due by `visibleAt`; the poll finds them (a nudge finds new ones at once).
    nextDueInMs: async () => null,
    async park({ d, fence }) {
      // Until the subscription is resumed (`DeliveryLog.unpark`).
      await Delivery.updateOne({ _id: d._id, claimSeq: fence as number }, { $set: { visibleAt: null }, $inc: { claimSeq: 1 } });
    },
  };
}

/**
 * Sends push deliveries (spec 3.4, 6.1) on the kernel's delivery runner (decision 0301): up to
 * `OBJSTORE_PUSH_CONCURRENCY` sends in flight, each signing and POSTing `{id, type, data}`; 2xx →
 * `delivered`; otherwise `pending` again after 30 s, 60 s, … capped at 1 h (the kernel's
 * `attemptOutcome`), and `exhausted` at the tenth failure. A paused subscription's deliveries are
 * parked (no `visibleAt`) until resumed; a deleted one's went with it.
 */
export class PushWorker implements BackgroundWorker {
  readonly name = 'objstore-push';
  private readonly allowHosts: Set<string>;
  private readonly runner: DeliveryRunner<DeliveryDoc, PushEndpoint, DueRef>;

  constructor(
    models: ObjstoreModels,
    private readonly subscriptions: Subscriptions,
    private readonly settings: ObjstoreSettings,
    private readonly now: () => number = Date.now,
  ) {
    this.allowHosts = parseAllowHosts(settings.OUTBOUND_ALLOW_HOSTS);
    this.runner = new DeliveryRunner({
      name: 'objstore-push',
      log: childLogger('objstore-push'),
      store: pushStore(models, settings),
      schedule: {
        retryBaseMs: settings.OBJSTORE_PUSH_BACKOFF_BASE_MS,
        retryMaxMs: settings.OBJSTORE_PUSH_BACKOFF_CAP_MS,
        maxAttempts: PUSH_MAX_FAILURES,
      },
      pollMs: settings.OBJSTORE_PUSH_POLL_MS,
      concurrency: settings.OBJSTORE_PUSH_CONCURRENCY,
      now,
      endpoint: (d) => this.endpoint(d),
      paused: (e) => !e.sub.enabled,
      goneError: 'the subscription was deleted',
      send: (e, d) => this.send(e, d),
    });
  }

  start(): void {
    this.runner.start();
  }

  stop(): Promise<void> {
    return this.runner.stop();
  }

  /** Scans now instead of at the next tick (new deliveries, a replay, a resume). */
  nudge(): void {
    this.runner.nudge();
  }

  /** Runs scans until nothing is due and nothing is in flight (tests and benchmarks). */
  drain(): Promise<void> {
    return this.runner.settle();
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

  private async endpoint(d: DeliveryDoc): Promise<PushEndpoint | null> {
    const found = await this.subscription(d.subscriptionId);
    // Parking on a stale "paused" would strand a delivery a resume just freed: read again first.
    if (!found || !found.sub.enabled) return this.subscription(d.subscriptionId, true);
    return found;
  }

  private async send({ sub, secret }: PushEndpoint, d: DeliveryDoc): Promise<DeliveryAttempt> {
    const rawBody = JSON.stringify({ id: d.eventId, type: d.eventType, data: d.data });
    const started = this.now();
    const attempt: DeliveryAttempt = {
      statusCode: null,
      durationMs: 0,
      at: new Date(started),
      responseExcerpt: null,
      error: null,
    };
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
      if (res.statusCode >= 300 && res.statusCode < 400) attempt.error = 'redirects are not followed';
    } catch (e) {
      attempt.error = e instanceof Error ? e.message : String(e);
    }
    attempt.durationMs = this.now() - started;
    return attempt;
  }
}
