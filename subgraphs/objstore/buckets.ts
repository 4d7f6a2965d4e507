import '../../core/object-buckets';
import type { ObjectEvent } from '../../core/events/object-events';
import { isDuplicateKey } from '../../core/mongo';
import { notFound } from '../../core/errors';
import type { Ports } from '../../core/ports';
import type { Principal } from '../../core/principal';
import type { ObjstoreModels } from './model';

/** Bucket owners remembered per process. */
const OWNER_CACHE_MAX = 10_000;

export const bucketNotFound = () => notFound('bucket_not_found', 'bucket not found');

/**
 * Which buckets exist and whose they are. The Assets area's `objectBuckets` port answers when it is
 * wired; otherwise (and in addition) the facts learnt from object events: the first event of a
 * bucket records its account, and an event that names another account for a known bucket is ignored.
 */
export class BucketDirectory {
  /** Bucket id → owning account, as recorded (owners never change). */
  private readonly owners = new Map<string, string>();

  constructor(
    private readonly models: ObjstoreModels,
    private readonly ports: Ports | undefined,
  ) {}

  /** The caller's bucket, or 404 `bucket_not_found` (another account's bucket looks the same). */
  async requireOwned(principal: Principal, bucketId: string): Promise<void> {
    if (this.ports?.has('objectBuckets')) {
      const b = await this.ports.get('objectBuckets').findBucket(bucketId);
      if (b && b.accountId === principal.accountId) return;
      if (b) throw bucketNotFound();
    }
    const fact = await this.models.BucketFact.findById(bucketId).lean();
    if (!fact || fact.accountId !== principal.accountId) throw bucketNotFound();
  }

  /**
   * Records what one event says about its bucket; false when the event contradicts the bucket's
   * known owner (such an event is dropped, never delivered to the other account's subscriptions).
   */
  async learn(e: ObjectEvent): Promise<boolean> {
    // A bucket's owner never changes: once known, no write per event.
    const known = this.owners.get(e.bucket_id);
    if (known !== undefined) return known === e.account_id;
    const owner = await this.record(e);
    if (owner) {
      if (this.owners.size >= OWNER_CACHE_MAX) this.owners.clear();
      this.owners.set(e.bucket_id, owner);
    }
    return owner === e.account_id;
  }

  private async record(e: ObjectEvent): Promise<string | undefined> {
    const at = new Date(e.occurred_at);
    const when = Number.isNaN(at.getTime()) ? new Date() : at;
    try {
      const fact = await this.models.BucketFact.findOneAndUpdate(
        { _id: e.bucket_id },
        {
          $setOnInsert: { accountId: e.account_id, firstSeenAt: when },
        },
        { upsert: true, new: true },
      ).lean();
      return fact?.accountId;
    } catch (err) {
      // Two first events of one bucket raced on the upsert: the loser reads the winner's record.
      if (!isDuplicateKey(err)) throw err;
      const fact = await this.models.BucketFact.findById(e.bucket_id).lean();
      return fact?.accountId;
    }
  }
}
