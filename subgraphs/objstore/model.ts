import mongoose, { type Connection, type Model } from 'mongoose';
import { model } from '../../core/mongo';
import type { ObjectEventType } from '../../core/events/object-events';

/**
 * Object-store events storage. The MongoDB-wire server uses an index only when a filter's fields are
 * exactly a unique index's keys, so every hot conditional update (claim, ack, push result) filters
 * on `{_id, claimSeq}`, backed by a unique index; only the candidate scan of
 * a pull or a push tick reads the collection. See docs/decisions/0070-objstore-delivery-queue.md.
 */

/** A bucket this area knows of, learnt from object events (or the `objectBuckets` port). */
export interface BucketFactDoc {
  /** The bucket's id. */
  _id: string;
  accountId: string;
  firstSeenAt: Date;
}

export type DeliveryMode = 'pull' | 'push';

export interface SubscriptionDoc {
  _id: string;
  accountId: string;
  bucketId: string;
  deliveryMode: DeliveryMode;
  url: string | null;
  eventTypes: ObjectEventType[];
  /** Literal key filters (no wildcards). */
  prefix: string | null;
  suffix: string | null;
  enabled: boolean;
  /** Push signing secret, AES-256-GCM sealed; null for pull subscriptions. */
  secretCiphertext: string | null;
  secretRotatedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/**
 * Pull: `available` → `claimed` → `completed` (or back to `available` on `retry: true`).
 * Push: `pending` → `delivered`, or `exhausted` after ten failures; replay → `pending`.
 */
export type DeliveryStatus = 'available' | 'claimed' | 'completed' | 'pending' | 'delivered' | 'exhausted';

export interface AttemptDoc {
  statusCode: number | null;
  durationMs: number;
  at: Date;
  responseExcerpt: string | null;
  /** Why an attempt failed without an HTTP answer (timeout, refused destination, network). */
  error: string | null;
}

export interface DeliveryDoc {
  _id: string;
  subscriptionId: string;
  accountId: string;
  bucketId: string;
  deliveryMode: DeliveryMode;
  eventId: string;
  eventType: ObjectEventType;
  /** The event's `data`, as pushed and pulled. */
  data: Record<string, unknown>;
  status: DeliveryStatus;
  /**
   * When a worker or a pull may take it next: null once finished (or parked while paused).
   * For a claimed pull delivery: the claim's expiry; for a push in flight: the send lease's end.
   */
  visibleAt: Date | null;
  /** Fencing counter: every transition (claim, ack, send, result, replay) increments it. */
  claimSeq: number;
  claimId: string | null;
  claimExpiresAt: Date | null;
  /** Pull claims issued so far (a legacy ack without claim_id is accepted only for the first). */
  claimCount: number;
  /** Push failures since the last (re)queue; ten exhaust. */
  failures: number;
  attempts: AttemptDoc[];
  completedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

const bucketFactSchema = new mongoose.Schema<BucketFactDoc>(
  {
    _id: String,
    accountId: { type: String, required: true },
    firstSeenAt: { type: Date, required: true },
  },
  { collection: 'objstore_buckets', versionKey: false },
);

const subscriptionSchema = new mongoose.Schema<SubscriptionDoc>(
  {
    _id: String,
    accountId: { type: String, required: true },
    bucketId: { type: String, required: true },
    deliveryMode: { type: String, required: true, enum: ['pull', 'push'] },
    url: { type: String, default: null },
    eventTypes: { type: [String], required: true },
    prefix: { type: String, default: null },
    suffix: { type: String, default: null },
    enabled: { type: Boolean, required: true },
    secretCiphertext: { type: String, default: null },
    secretRotatedAt: { type: Date, default: null },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'objstore_subscriptions', versionKey: false },
);
subscriptionSchema.index({ bucketId: 1, createdAt: 1 });

const attemptSchema = new mongoose.Schema<AttemptDoc>(
  {
    statusCode: { type: Number, default: null },
    durationMs: { type: Number, required: true },
    at: { type: Date, required: true },
    responseExcerpt: { type: String, default: null },
    error: { type: String, default: null },
  },
  { _id: false },
);

const deliverySchema = new mongoose.Schema<DeliveryDoc>(
  {
    _id: String,
    subscriptionId: { type: String, required: true },
    accountId: { type: String, required: true },
    bucketId: { type: String, required: true },
    deliveryMode: { type: String, required: true },
    eventId: { type: String, required: true },
    eventType: { type: String, required: true },
    data: { type: mongoose.Schema.Types.Mixed, required: true },
    status: { type: String, required: true },
    visibleAt: { type: Date, default: null },
    claimSeq: { type: Number, default: 0 },
    claimId: { type: String, default: null },
    claimExpiresAt: { type: Date, default: null },
    claimCount: { type: Number, default: 0 },
    failures: { type: Number, default: 0 },
    attempts: { type: [attemptSchema], default: [] },
    completedAt: { type: Date, default: null },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'objstore_deliveries', versionKey: false, minimize: false },
);
// A replayed event never makes a second delivery for the same subscription.
deliverySchema.index({ subscriptionId: 1, eventId: 1 }, { unique: true, name: 'subscription_event' });
// Every transition is a conditional update on {_id, claimSeq} (a fencing counter): a unique index,
// so the wire server finds the document without a scan.
deliverySchema.index({ _id: 1, claimSeq: 1 }, { unique: true, name: 'claim_fence' });
// Candidate scans and history (a real MongoDB uses these; the wire server scans).
deliverySchema.index({ subscriptionId: 1, visibleAt: 1 });
deliverySchema.index({ deliveryMode: 1, visibleAt: 1 });
deliverySchema.index({ subscriptionId: 1, createdAt: -1, _id: -1 });

export interface ObjstoreModels {
  BucketFact: Model<BucketFactDoc>;
  Subscription: Model<SubscriptionDoc>;
  Delivery: Model<DeliveryDoc>;
}

export function objstoreModels(conn: Connection): ObjstoreModels {
  return {
    BucketFact: model(conn, 'objstore', 'BucketFact', bucketFactSchema),
    Subscription: model(conn, 'objstore', 'Subscription', subscriptionSchema),
    Delivery: model(conn, 'objstore', 'Delivery', deliverySchema),
  };
}
