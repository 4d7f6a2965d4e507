import { randomUUID } from 'node:crypto';
import type { OutboxEntry } from '../../../core/events/outbox';
import { OBJECT_EVENTS_TOPIC, type ObjectEvent, type ObjectEventType } from '../../../core/events/object-events';
import type { AssetDoc } from './model';

/**
 * Topics of the assets area. `assets.objects` carries `ObjectEvent` (core/events/object-events.ts),
 * keyed by bucket id so each bucket's changes stay in order; the object-store events area
 * consumes it. Every event is written into the changed document's outbox by the same update that
 * makes the change, and its `event_id` is fixed then, so a redelivery carries the same id.
 */
export const TOPICS = {
  objects: OBJECT_EVENTS_TOPIC,
  /** Record changes with no object event, for the webhooks (`RecordChange` in webhooks/sources.ts). */
  recordChanges: 'assets.record-changes',
} as const;

export interface ObjectChange {
  type: ObjectEventType;
  asset: Pick<AssetDoc, '_id' | 'accountId' | 'bucketId' | 'key'>;
  version: number;
  size: number;
  contentType: string | null;
  sha256: string | null;
}

/** One outbox entry for one object change (`topic` is the physical topic with the prefix). */
export function objectEventEntry(topic: string, change: ObjectChange, now: Date = new Date()): OutboxEntry {
  const eventId = randomUUID();
  const payload: ObjectEvent = {
    event_id: eventId,
    type: change.type,
    account_id: change.asset.accountId,
    bucket_id: change.asset.bucketId,
    key: change.asset.key,
    asset_id: change.asset._id,
    version: change.version,
    size: change.size,
    content_type: change.contentType,
    sha256: change.sha256,
    occurred_at: now.toISOString(),
  };
  return { eventId, topic, key: change.asset.bucketId, payload, createdAt: now };
}
