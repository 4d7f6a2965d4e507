/**
 * Object events: the contract between the Assets storage core (producer) and the object-store
 * events area (consumer). Lives in the kernel because two areas share it and neither may import
 * the other. Topic: `${KAFKA_TOPIC_PREFIX}.assets.objects`, keyed by bucket id (order per bucket).
 */
export const OBJECT_EVENTS_TOPIC = 'assets.objects';

/** Spec 6.1. */
export const OBJECT_EVENT_TYPES = ['object.created', 'object.overwritten', 'object.deleted'] as const;
export type ObjectEventType = (typeof OBJECT_EVENT_TYPES)[number];

export interface ObjectEvent {
  /** Stable across redelivery: the same change always carries the same id. */
  event_id: string;
  type: ObjectEventType;
  account_id: string;
  bucket_id: string;
  /** The object key inside the bucket. */
  key: string;
  asset_id: string;
  /** Version of the asset this event is about (the removed one for `object.deleted`). */
  version: number;
  size: number;
  content_type: string | null;
  /** Hex SHA-256 of the bytes (null for a delete). */
  sha256: string | null;
  /** ISO time of the change. */
  occurred_at: string;
}
