import { type Connection, type Model, Schema } from 'mongoose';
import { type DeliveryRecord, type EndpointRecord, deliverySchema as kernelDeliverySchema } from '../../../core/delivery/record';
import { model } from '../../../core/mongo';

export type WebhookDoc = EndpointRecord;

/** One event for one webhook (the kernel's record, `core/delivery/record.ts`), with Assets' ordering. */
export interface DeliveryDoc extends DeliveryRecord {
  /**
   * `<webhookId>:<assetId>` for an event about one asset: such deliveries go out one at a time in
   * `seq` order, a later one waiting while an earlier one is pending (decision 0101). Null: unordered.
   */
  orderKey?: string | null;
  /** The event's `occurredAt` in ms × 16 + its `order`. */
  seq?: number | null;
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

const deliverySchema = kernelDeliverySchema<DeliveryDoc>('asset_webhook_deliveries', {
  orderKey: { type: String, default: null },
  seq: { type: Number, default: null },
});
// The earlier pending delivery of the same asset and webhook, if any (the ordering gate).
deliverySchema.index({ orderKey: 1, status: 1, seq: 1 });

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
