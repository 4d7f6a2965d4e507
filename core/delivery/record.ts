import { Schema, type SchemaDefinition } from 'mongoose';
import type { DeliveryStatus } from './engine';

/** A webhook endpoint: where an area's deliveries go and the secret they are signed with. */
export interface EndpointRecord {
  _id: string;
  accountId: string;
  url: string;
  /** The event types it is sent. */
  eventTypes: string[];
  description: string | null;
  enabled: boolean;
  /** `whsec_…`, sealed with AES-256-GCM (`core/secrets.ts`); never selected into a view. */
  secretSealed: string;
  createdAt: Date;
  updatedAt: Date;
}

/** One try of one delivery, as the delivery history shows it. */
export interface DeliveryAttempt {
  statusCode: number | null;
  durationMs: number;
  at: Date;
  responseExcerpt: string | null;
  error: string | null;
}

export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['pending', 'succeeded', 'failed'];

/**
 * One event for one endpoint, written before any attempt so a crash loses nothing. Every area's
 * webhook deliveries are this record (docs/decisions/0230-one-delivery-engine.md); an area adds
 * fields of its own (Assets: the ordering key; mail: the outbox) and its own collection.
 */
export interface DeliveryRecord {
  /** Derived from the event id and the endpoint id: an event fanned out twice makes one delivery. */
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
  createdAt: Date;
  updatedAt: Date;
}

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

/**
 * The schema of a delivery record in `collection`, with `extra` fields of the area's, and the
 * indexes the engine's queries use: due work, one endpoint's history, and the claim's exact keys
 * (docs/decisions/0001-mongodb-wire-server.md: an exact unique index avoids a scan).
 */
export function deliverySchema<T extends DeliveryRecord>(collection: string, extra: SchemaDefinition = {}): Schema<T> {
  const schema = new Schema<T>(
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
      ...extra,
      createdAt: Date,
      updatedAt: Date,
    } as SchemaDefinition,
    { collection, versionKey: false, minimize: false },
  );
  schema.index({ status: 1, nextAttemptAt: 1 });
  schema.index({ webhookId: 1, createdAt: -1 });
  schema.index({ _id: 1, status: 1, leaseUntil: 1 }, { unique: true, name: 'delivery_claim' });
  return schema;
}

/** A new delivery, due now: what an area's fan-out writes, with its own fields added. */
export function newDelivery(
  fields: Pick<DeliveryRecord, '_id' | 'accountId' | 'webhookId' | 'eventId' | 'eventType' | 'body'>,
  now: Date = new Date(),
): DeliveryRecord {
  return {
    ...fields,
    status: 'pending',
    attempts: [],
    nextAttemptAt: now,
    leaseUntil: null,
    createdAt: now,
    updatedAt: now,
  };
}
