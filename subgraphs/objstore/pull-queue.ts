import { conflict, notFound } from '../../core/errors';
import { newId } from '../../core/ids';
import { type Principal, requireScope, requireWriter } from '../../core/principal';
import type { DeliveryDoc, ObjstoreModels } from './model';
import { PULL_BATCH_DEFAULT, PULL_BATCH_MAX, type ObjstoreSettings } from './settings';
import { WRITE_SCOPE, type Subscriptions } from './subscriptions';

/** A delivery handed to a pull consumer. */
export interface PulledDelivery {
  id: string;
  claimId: string;
  eventId: string;
  type: string;
  data: Record<string, unknown>;
  claimExpiresAt: Date;
  /** 1 for the first claim of this delivery, 2 after a retry or an expired claim, … */
  attempt: number;
}

export const deliveryNotFound = () => notFound('delivery_not_found', 'event delivery not found');
const staleClaim = (message: string, details: Record<string, unknown> = {}) => conflict('stale_claim', message, details);

/** Candidates read per pull, as a multiple of the batch asked for (others may win some of them). */
const CANDIDATE_FACTOR = 4;
/** Rounds of scan-and-claim before a pull answers with what it has. */
const CLAIM_ROUNDS = 3;

/**
 * The pull queue (spec 3.4). A delivery is visible to pulls while `visibleAt <= now`: an available
 * one from when it is queued (or retried), a claimed one once its claim expires. A claim is one
 * conditional update on `{_id, claimSeq}`: of any number of consumers racing for a delivery exactly
 * one wins, and each transition bumps `claimSeq`, so a consumer holding an old read can never act on
 * a newer claim. Acknowledgements are fenced by `claim_id`.
 */
export class PullQueue {
  constructor(
    private readonly models: ObjstoreModels,
    private readonly subscriptions: Subscriptions,
    private readonly settings: ObjstoreSettings,
  ) {}

  async pull(
    principalIn: Principal | null,
    bucketId: string,
    subscriptionId: string,
    limit?: number | null,
  ): Promise<PulledDelivery[]> {
    const principal = requireScope(requireWriter(principalIn), WRITE_SCOPE);
    const sub = await this.subscriptions.load(principal, bucketId, subscriptionId);
    if (sub.deliveryMode !== 'pull') {
      throw conflict('not_a_pull_subscription', 'this subscription pushes its deliveries; it cannot be pulled');
    }
    // Paused: no new claims (spec 3.4); what waits is claimed after resume.
    if (!sub.enabled) return [];
    const want = Math.min(Math.max(limit ?? PULL_BATCH_DEFAULT, 1), PULL_BATCH_MAX);
    const out: PulledDelivery[] = [];
    for (let round = 0; round < CLAIM_ROUNDS && out.length < want; round++) {
      const now = new Date();
      const candidates = await this.models.Delivery.find({ subscriptionId, visibleAt: { $lte: now } }, { _id: 1, claimSeq: 1 })
        // No sort: the wire server stops at the limit instead of reading and sorting the whole
        // queue; roughly arrival order (a retried delivery may come before older ones).
        .limit((want - out.length) * CANDIDATE_FACTOR + round * want)
        .lean();
      if (candidates.length === 0) break;
      // Consumers that read the same candidates try them in different orders, so fewer collide.
      for (const c of shuffle(candidates)) {
        if (out.length >= want) break;
        const claimed = await this.claim(c._id, c.claimSeq);
        if (claimed) out.push(claimed);
      }
    }
    return out;
  }

  private async claim(id: string, claimSeq: number): Promise<PulledDelivery | null> {
    const now = Date.now();
    const expires = new Date(now + this.settings.OBJSTORE_CLAIM_LEASE_MS);
    const d = await this.models.Delivery.findOneAndUpdate(
      { _id: id, claimSeq },
      {
        $set: { status: 'claimed', claimId: newId(), claimExpiresAt: expires, visibleAt: expires, updatedAt: new Date(now) },
        $inc: { claimSeq: 1, claimCount: 1 },
      },
      { new: true },
    ).lean();
    if (!d || !d.claimId) return null;
    return {
      id: d._id,
      claimId: d.claimId,
      eventId: d.eventId,
      type: d.eventType,
      data: d.data,
      claimExpiresAt: expires,
      attempt: d.claimCount,
    };
  }

  /**
   * `retry: false` completes; `retry: true` makes it available again after the retry delay (a new
   * claim gets a new claim id). A stale, expired or unknown claim is 409 and changes nothing. Without
   * `claim_id` (legacy clients) only a first, unexpired claim may be acknowledged.
   */
  async ack(
    principalIn: Principal | null,
    bucketId: string,
    deliveryId: string,
    input: { claimId?: string | null; retry?: boolean | null },
  ): Promise<DeliveryDoc> {
    const principal = requireScope(requireWriter(principalIn), WRITE_SCOPE);
    const d = await this.load(principal, bucketId, deliveryId);
    if (d.deliveryMode !== 'pull') throw conflict('not_a_pull_delivery', 'push deliveries are not acknowledged');
    if (d.status !== 'claimed' || !d.claimId) throw staleClaim('this delivery holds no claim', { status: d.status });
    if (input.claimId) {
      if (input.claimId !== d.claimId) throw staleClaim('claim_id is not the current claim of this delivery');
    } else if (d.claimCount !== 1) {
      throw staleClaim('this delivery was claimed again; acknowledge it with its claim_id', { reason: 'claim_id_required' });
    }
    const now = new Date();
    if (!d.claimExpiresAt || d.claimExpiresAt.getTime() <= now.getTime()) {
      throw conflict('claim_expired', 'the claim has expired; pull the delivery again');
    }
    const set = input.retry
      ? {
          status: 'available',
          claimId: null,
          claimExpiresAt: null,
          visibleAt: new Date(now.getTime() + this.settings.OBJSTORE_PULL_RETRY_DELAY_MS),
          updatedAt: now,
        }
      : { status: 'completed', visibleAt: null, completedAt: now, updatedAt: now };
    const updated = await this.models.Delivery.findOneAndUpdate(
      { _id: d._id, claimSeq: d.claimSeq },
      { $set: set, $inc: { claimSeq: 1 } },
      { new: true },
    ).lean();
    // Lost the race: the claim expired and was taken, or another ack won; the newer state stands.
    if (!updated) throw staleClaim('claim_id is not the current claim of this delivery');
    return updated;
  }

  async load(principal: Principal, bucketId: string, deliveryId: string): Promise<DeliveryDoc> {
    const d = await this.models.Delivery.findById(deliveryId).lean();
    if (!d || d.bucketId !== bucketId || d.accountId !== principal.accountId) throw deliveryNotFound();
    return d;
  }
}

function shuffle<T>(xs: T[]): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return xs;
}
