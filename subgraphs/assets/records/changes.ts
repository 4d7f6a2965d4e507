import { randomUUID } from 'node:crypto';
import type { OutboxEntry } from '../../../core/events/outbox';

/** Topic (after the prefix and area) of record changes that write no object event. */
export const RECORD_CHANGES_TOPIC = 'record-changes';

export interface RecordChange {
  event_id: string;
  account_id: string;
  asset_id: string;
  /** The revision the change made. */
  revision: number;
  occurred_at: string;
}

/**
 * Adds a record-change entry to the asset's outbox in the same update as a guarded change that
 * writes no object event of its own (object events become webhook events already) and does not
 * start a delete (that ends as `asset.deleted`). Same write, so the event cannot be lost.
 */
export function withRecordChange(
  topic: string,
  ref: { accountId: string; id: string; revision: number },
  update: Record<string, unknown>,
): Record<string, unknown> {
  const push = (update.$push ?? {}) as Record<string, unknown>;
  const set = (update.$set ?? {}) as Record<string, unknown>;
  if (push.outbox || set.status === 'deleting') return update;
  const now = new Date();
  const change: RecordChange = {
    event_id: randomUUID(),
    account_id: ref.accountId,
    asset_id: ref.id,
    revision: ref.revision + 1,
    occurred_at: now.toISOString(),
  };
  const entry: OutboxEntry = { eventId: change.event_id, topic, key: ref.id, payload: change, createdAt: now };
  return { ...update, $push: { ...push, outbox: entry } };
}
