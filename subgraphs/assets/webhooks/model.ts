import { type Connection, type Model, Schema } from 'mongoose';
import { model } from '../../../core/mongo';

export interface WebhookDoc {
  _id: string;
  accountId: string;
  url: string;
  eventTypes: string[];
  description: string | null;
  enabled: boolean;
  /** AES-256-GCM sealed signing secret (`whsec_…`); never selected into a view. */
  secretSealed: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface DeliveryAttempt {
  statusCode: number | null;
  durationMs: number;
  at: Date;
  responseExcerpt: string | null;
  error: string | null;
}

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** One event for one webhook: created before any attempt, so a crash loses nothing. */
export interface DeliveryDoc {
  /** Derived from the event id and the webhook id: an event fanned out twice makes one delivery. */
  _id: string;
  accountId: string;
  webhookId: string;
  eventId: string;
  eventType: string;
  /** The exact signed body (the same bytes on every attempt). */
  body: string;
  status: DeliveryStatus;
  attempts: DeliveryAttempt[];
  nextAttemptAt: Date | null;
  /** Until when a worker's claim holds (a dead worker's claim lapses and another one sends). */
  leaseUntil: Date | null;
  /**
   * `<webhookId>:<assetId>` for an event about one asset: such deliveries go out one at a time in
   * `seq` order, a later one waiting while an earlier one is pending (decision 0101). Null: unordered.
   */
  orderKey?: string | null;
  /** The event's `occurredAt` in ms × 16 + its `order`. */
  seq?: number | null;
  createdAt: Date;
  updatedAt: Date;
}

const webhookSchema = new Schema<WebhookDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    url: { type: String, required: true },
    eventTypes: { type: [String], required: true },
    description: { type: String, default: null },
    enabled: { type: Boolean, default: true },
    secretSealed: { type: String, required: true },
    createdAt: Date,
    updatedAt: Date,
  },
  { collection: 'asset_webhooks', versionKey: false, minimize: false },
);
webhookSchema.index({ accountId: 1, createdAt: 1 });

const attemptSchema = new Schema<DeliveryAttempt>(
  {
    statusCode: { type: Number, default: null },
    durationMs: Number,
    at: Date,
    responseExcerpt: { type: String, default: null },
    error: { type: String, default: null },
  },
  { _id: false },
);

const deliverySchema = new Schema<DeliveryDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    webhookId: { type: String, required: true },
    eventId: { type: String, required: true },
    eventType: { type: String, required: true },
    body: { type: String, required: true },
    status: { type: String, required: true },
    attempts: { type: [attemptSchema], default: () => [] },
    nextAttemptAt: { type: Date, default: null },
    leaseUntil: { type: Date, default: null },
    orderKey: { type: String, default: null },
    seq: { type: Number, default: null },
    createdAt: Date,
    updatedAt: Date,
  },
  { collection: 'asset_webhook_deliveries', versionKey: false, minimize: false },
);
deliverySchema.index({ status: 1, nextAttemptAt: 1 });
deliverySchema.index({ webhookId: 1, createdAt: -1 });
// The earlier pending delivery of the same asset and webhook, if any (the ordering gate).
deliverySchema.index({ orderKey: 1, status: 1, seq: 1 });
// Exact keys of the claim (decision 0001: an exact unique index avoids a scan).
deliverySchema.index({ _id: 1, status: 1, leaseUntil: 1 }, { unique: true, name: 'delivery_claim' });

export interface WebhookModels {
  Webhook: Model<WebhookDoc>;
  Delivery: Model<DeliveryDoc>;
}

export function webhookModels(conn: Connection): WebhookModels {
  return {
    Webhook: model(conn, 'assets', 'AssetWebhook', webhookSchema),
    Delivery: model(conn, 'assets', 'AssetWebhookDelivery', deliverySchema),
  };
}
