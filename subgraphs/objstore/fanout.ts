import { z } from 'zod';
import { PlatformError } from '../../core/errors';
import { OBJECT_EVENT_TYPES, type ObjectEvent } from '../../core/events/object-events';
import { newId } from '../../core/ids';
import { isDuplicateKey } from '../../core/mongo';
import type { BucketDirectory } from './buckets';
import type { DeliveryDoc, ObjstoreModels, SubscriptionDoc } from './model';
import { matches } from './subscriptions';

/** How long the fan-out may use a bucket's subscription list as read: 1 s. */
const SUBSCRIPTIONS_CACHE_MS = 1000;

/** What a consumer accepts from `${prefix}.assets.objects` (core/events/object-events.ts). */
const objectEventSchema = z.object({
  event_id: z.string().min(1).max(200),
  type: z.enum(OBJECT_EVENT_TYPES),
  account_id: z.string().min(1),
  bucket_id: z.string().min(1),
  key: z.string(),
  asset_id: z.string(),
  version: z.number(),
  size: z.number(),
  content_type: z.string().nullable(),
  sha256: z.string().nullable(),
  occurred_at: z.string(),
});

/** The `data` of a pushed or pulled event: the object it is about. */
export function eventData(e: ObjectEvent): Record<string, unknown> {
  return {
    bucket_id: e.bucket_id,
    key: e.key,
    asset_id: e.asset_id,
    version: e.version,
    size: e.size,
    content_type: e.content_type,
    sha256: e.sha256,
    occurred_at: e.occurred_at,
  };
}

/**
 * Fans one object event into a delivery per matching subscription of its bucket. Idempotent: the
 * unique index on (subscription, event id) turns a replayed event into duplicate-key errors that
 * are ignored, so Kafka's at-least-once delivery never makes a second delivery. Paused subscriptions
 * still receive deliveries (they wait until resumed).
 */
export class Fanout {
  private readonly cache = new Map<string, { at: number; subs: SubscriptionDoc[] }>();

  constructor(
    private readonly models: ObjstoreModels,
    private readonly buckets: BucketDirectory,
    /** Told how many push deliveries were queued, so a local worker can send at once. */
    private readonly onQueued: (push: number) => void,
  ) {}

  /**
   * A bucket's subscriptions, read at most once a second per bucket: a create or delete in this
   * process forgets the entry at once; one made in another process is seen within 1 s.
   */
  private async subscriptionsOf(bucketId: string): Promise<SubscriptionDoc[]> {
    const hit = this.cache.get(bucketId);
    if (hit && Date.now() - hit.at < SUBSCRIPTIONS_CACHE_MS) return hit.subs;
    const at = Date.now();
    const subs = await this.models.Subscription.find({ bucketId }).lean();
    if (this.cache.size >= 10_000) this.cache.clear();
    this.cache.set(bucketId, { at, subs });
    return subs;
  }

  /** Called when a subscription of the bucket is created or removed in this process. */
  forget(bucketId: string): void {
    this.cache.delete(bucketId);
  }

  /** Returns the number of new deliveries. A malformed event is a non-retriable error (dead-lettered). */
  async handle(value: unknown): Promise<number> {
    const parsed = objectEventSchema.safeParse(value);
    if (!parsed.success) {
      throw new PlatformError('invalid_object_event', 400, `malformed object event: ${parsed.error.issues[0]?.message ?? ''}`);
    }
    const e = parsed.data as ObjectEvent;
    if (!(await this.buckets.learn(e))) return 0;
    const subs = await this.subscriptionsOf(e.bucket_id);
    const now = new Date();
    const docs: DeliveryDoc[] = subs
      .filter((s) => s.accountId === e.account_id && matches(s, e))
      .map((s) => ({
        _id: newId(),
        subscriptionId: s._id,
        accountId: s.accountId,
        bucketId: s.bucketId,
        deliveryMode: s.deliveryMode,
        eventId: e.event_id,
        eventType: e.type,
        data: eventData(e),
        status: s.deliveryMode === 'push' ? 'pending' : 'available',
        visibleAt: now,
        claimSeq: 0,
        claimId: null,
        claimExpiresAt: null,
        claimCount: 0,
        failures: 0,
        attempts: [],
        completedAt: null,
        createdAt: now,
        updatedAt: now,
      }));
    if (docs.length === 0) return 0;
    let inserted = docs.length;
    try {
      await this.models.Delivery.insertMany(docs, { ordered: false });
    } catch (err) {
      const writeErrors = (err as { writeErrors?: { code?: number; err?: { code?: number } }[] }).writeErrors;
      if (!writeErrors && !isDuplicateKey(err)) throw err;
      const errors = writeErrors ?? [err as { code?: number }];
      if (!errors.every((w) => isDuplicateKey(w) || isDuplicateKey((w as { err?: unknown }).err))) throw err;
      inserted -= errors.length;
    }
    const push = docs.filter((d) => d.deliveryMode === 'push').length;
    if (push > 0 && inserted > 0) this.onQueued(push);
    return inserted;
  }
}
