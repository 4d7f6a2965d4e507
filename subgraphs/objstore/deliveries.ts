import { badRequest, conflict } from '../../core/errors';
import { findPage } from '../../core/keyset';
import { type Principal, requireScope, requireWriter } from '../../core/principal';
import type { AttemptDoc, DeliveryDoc, ObjstoreModels } from './model';
import type { PullQueue } from './pull-queue';
import { HISTORY_PAGE_MAX } from './settings';
import { READ_SCOPE, WRITE_SCOPE, type Subscriptions } from './subscriptions';

export interface DeliveryView {
  id: string;
  subscriptionId: string;
  eventId: string;
  type: string;
  data: Record<string, unknown>;
  deliveryMode: string;
  status: string;
  attempts: AttemptDoc[];
  failureCount: number;
  claimCount: number;
  nextAttemptAt: Date | null;
  completedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export function deliveryView(d: DeliveryDoc): DeliveryView {
  return {
    id: d._id,
    subscriptionId: d.subscriptionId,
    eventId: d.eventId,
    type: d.eventType,
    data: d.data,
    deliveryMode: d.deliveryMode,
    status: d.status,
    attempts: d.attempts ?? [],
    failureCount: d.failures,
    claimCount: d.claimCount,
    // A pending push waits for `visibleAt`; an available pull delivery becomes claimable then.
    nextAttemptAt: d.status === 'pending' || d.status === 'available' ? d.visibleAt : null,
    completedAt: d.completedAt,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
  };
}

/** Delivery history (newest first, ≤ 50 a page) and replay of push deliveries. */
export class DeliveryLog {
  constructor(
    private readonly models: ObjstoreModels,
    private readonly subscriptions: Subscriptions,
    private readonly queue: PullQueue,
    private readonly onRequeued: () => void,
  ) {}

  async history(
    principalIn: Principal | null,
    bucketId: string,
    subscriptionId: string,
    limit?: number | null,
    cursor?: string | null,
  ): Promise<{ items: DeliveryView[]; nextCursor: string }> {
    const principal = requireScope(principalIn, READ_SCOPE);
    await this.subscriptions.load(principal, bucketId, subscriptionId);
    if (limit !== undefined && limit !== null && (limit < 1 || limit > HISTORY_PAGE_MAX)) {
      throw badRequest('invalid_limit', `limit must be between 1 and ${HISTORY_PAGE_MAX}`);
    }
    const page = await findPage<DeliveryDoc>(
      this.models.Delivery,
      { subscriptionId },
      { field: 'createdAt', binding: `objstore-history:${subscriptionId}`, limit: limit ?? HISTORY_PAGE_MAX, cursor },
    );
    // No next page is an empty cursor here (the area's published answer).
    const nextCursor = page.nextCursor ?? '';
    return { items: page.items.map(deliveryView), nextCursor };
  }

  /**
   * Requeues a delivered or exhausted push delivery with the same event id (attempt history kept,
   * failures counted afresh). A replay of a delivery already pending changes nothing.
   */
  async replay(principalIn: Principal | null, bucketId: string, deliveryId: string): Promise<DeliveryView> {
    const principal = requireScope(requireWriter(principalIn), WRITE_SCOPE);
    const d = await this.queue.load(principal, bucketId, deliveryId);
    if (d.deliveryMode !== 'push') throw conflict('not_a_push_delivery', 'only push deliveries can be replayed');
    const sub = await this.subscriptions.load(principal, bucketId, d.subscriptionId);
    if (!sub.enabled) throw conflict('subscription_paused', 'resume the subscription before replaying its deliveries');
    if (d.status === 'pending') return deliveryView(d);
    const now = new Date();
    const updated = await this.models.Delivery.findOneAndUpdate(
      { _id: d._id, claimSeq: d.claimSeq },
      { $set: { status: 'pending', failures: 0, visibleAt: now, completedAt: null, updatedAt: now }, $inc: { claimSeq: 1 } },
      { new: true },
    ).lean();
    if (!updated) {
      // A concurrent replay won: the delivery is pending once, as it should be.
      return deliveryView((await this.models.Delivery.findById(d._id).lean()) ?? d);
    }
    this.onRequeued();
    return deliveryView(updated);
  }

  /** After a resume: parked push deliveries of the subscription become due again. */
  async unpark(subscriptionId: string): Promise<void> {
    await this.models.Delivery.updateMany(
      { subscriptionId, status: 'pending', visibleAt: null },
      { $set: { visibleAt: new Date() }, $inc: { claimSeq: 1 } },
    );
    this.onRequeued();
  }
}
