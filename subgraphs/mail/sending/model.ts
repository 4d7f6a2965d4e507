import mongoose, { type Connection, type Model } from 'mongoose';
import { type OutboxEntry, outboxPlugin } from '../../../core/events/outbox';
import { type DeliveryRecord, type EndpointRecord, deliverySchema as kernelDeliverySchema } from '../../../core/delivery/record';
import { model } from '../../../core/mongo';

/** The sending side's collections. Every id is the `_id`, so reads and claims are exact-key matches. */
export type MessageStatus = 'queued' | 'sending' | 'deferred' | 'delivered' | 'bounced' | 'failed' | 'suppressed' | 'recorded';
export type RecipientStatus = 'pending' | 'delivered' | 'deferred' | 'bounced' | 'suppressed';

export interface TimelineItem {
  type: string;
  label: string;
  createdAt: Date;
  metadata: Record<string, unknown> | null;
}

export interface MessageDoc {
  _id: string;
  accountId: string;
  /** Test-key mail is recorded only (`recorded`), never handed to SMTP. */
  test: boolean;
  from: string;
  to: string[];
  cc: string[];
  bcc: string[];
  subject: string;
  html: string | null;
  text: string | null;
  tags: string[];
  /** Assets sent as attachments, pinned to the version current at the send (absent on old messages). */
  attachments?: MessageAttachment[];
  status: MessageStatus;
  recipients: { address: string; status: RecipientStatus; detail: string | null }[];
  attempts: number;
  nextAttemptAt: Date | null;
  leaseUntil: Date | null;
  timeline: TimelineItem[];
  outbox: OutboxEntry[];
  createdAt: Date;
  updatedAt: Date;
}

export interface MessageAttachment {
  assetId: string;
  version: number;
  filename: string;
  contentType: string;
  size: number;
}

export interface SuppressionDoc {
  _id: string; // `${accountId}:${address}`
  accountId: string;
  address: string;
  reason: string;
  messageId: string | null;
  outbox: OutboxEntry[];
  createdAt: Date;
}

export interface EventDoc {
  _id: string; // the event id
  accountId: string;
  type: string;
  resourceType: string;
  resourceId: string;
  messageId: string | null;
  createdAt: Date;
  data: Record<string, unknown>;
}

export interface WebhookDoc extends EndpointRecord {
  /** The secret before the last rotation, sealed; deliveries carry its signature too until `previousSecretUntil`. */
  previousSecretSealed?: string | null;
  previousSecretUntil?: Date | null;
  outbox: OutboxEntry[];
}

/** One event for one endpoint (the kernel's record, `core/delivery/record.ts`); `_id` is `${eventId}:${webhookId}`. */
export interface DeliveryDoc extends DeliveryRecord {
  outbox: OutboxEntry[];
}

const mixed = mongoose.Schema.Types.Mixed;

const messageSchema = new mongoose.Schema<MessageDoc>(
  {
    _id: String,
    accountId: { type: String, required: true },
    test: { type: Boolean, default: false },
    from: String,
    to: [String],
    cc: [String],
    bcc: [String],
    subject: String,
    html: { type: String, default: null },
    text: { type: String, default: null },
    tags: [String],
    attachments: {
      type: [{ _id: false, assetId: String, version: Number, filename: String, contentType: String, size: Number }],
      default: undefined,
    },
    status: { type: String, required: true },
    recipients: { type: [{ _id: false, address: String, status: String, detail: { type: String, default: null } }], default: [] },
    attempts: { type: Number, default: 0 },
    nextAttemptAt: { type: Date, default: null },
    leaseUntil: { type: Date, default: null },
    timeline: {
      type: [{ _id: false, type: { type: String }, label: String, createdAt: Date, metadata: { type: mixed, default: null } }],
      default: [],
    },
    createdAt: Date,
    updatedAt: Date,
  },
  { collection: 'mail_messages', versionKey: false, minimize: false },
);
messageSchema.index({ status: 1, nextAttemptAt: 1 });
messageSchema.plugin(outboxPlugin);

const suppressionSchema = new mongoose.Schema<SuppressionDoc>(
  {
    _id: String,
    accountId: String,
    address: String,
    reason: String,
    messageId: { type: String, default: null },
    createdAt: Date,
  },
  { collection: 'mail_suppressions', versionKey: false },
);
suppressionSchema.plugin(outboxPlugin);

const eventSchema = new mongoose.Schema<EventDoc>(
  {
    _id: String,
    accountId: { type: String, required: true },
    type: String,
    resourceType: String,
    resourceId: String,
    messageId: { type: String, default: null },
    createdAt: Date,
    data: { type: mixed, default: {} },
  },
  { collection: 'mail_events', versionKey: false, minimize: false },
);
eventSchema.index({ accountId: 1, createdAt: -1 });

const webhookSchema = new mongoose.Schema<WebhookDoc>(
  {
    _id: String,
    accountId: { type: String, required: true },
    url: String,
    eventTypes: [String],
    description: { type: String, default: null },
    enabled: { type: Boolean, default: true },
    secretSealed: String,
    previousSecretSealed: { type: String, default: null },
    previousSecretUntil: { type: Date, default: null },
    createdAt: Date,
    updatedAt: Date,
  },
  { collection: 'mail_webhooks', versionKey: false },
);
webhookSchema.index({ accountId: 1 });
webhookSchema.plugin(outboxPlugin);

const deliverySchema = kernelDeliverySchema<DeliveryDoc>('mail_webhook_deliveries');
deliverySchema.plugin(outboxPlugin);

export interface SendingModels {
  Message: Model<MessageDoc>;
  Suppression: Model<SuppressionDoc>;
  Event: Model<EventDoc>;
  Webhook: Model<WebhookDoc>;
  Delivery: Model<DeliveryDoc>;
}

const get = <T>(conn: Connection, name: string, schema: mongoose.Schema<T>) => model<T>(conn, 'mail', name, schema);

export function sendingModels(conn: Connection): SendingModels {
  return {
    Message: get(conn, 'Message', messageSchema),
    Suppression: get(conn, 'Suppression', suppressionSchema),
    Event: get(conn, 'Event', eventSchema),
    Webhook: get(conn, 'Webhook', webhookSchema),
    Delivery: get(conn, 'WebhookDelivery', deliverySchema),
  };
}
