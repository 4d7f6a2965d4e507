import type { ObjectEvent } from '../../../core/events/object-events';
import { type AssetWebhookEmitter, type AssetWebhookEvent, stableId } from './events';
import type { RecordChange, AssetDoc } from '../records';
import type { AssetsService } from '../storage';

/**
 * Where asset webhook events come from.
 *
 * - Object events (`assets.objects`, written by the same update as the change through the asset's
 *   outbox, consumed at least once): `object.created` → `asset.created`, `object.overwritten` →
 *   `asset.updated`, `object.deleted` → `asset.deleted`; an upload that ends `ready` also gives
 *   `asset.processed`, one that ends `quarantined` gives `asset.quarantined`. Each webhook event id
 *   is derived from the object event's, so a redelivered object event makes no second delivery.
 * - Record changes with no object event (PATCH without a move, tags, metadata): `asset.updated`
 *   from a `record-changes` entry the same update writes into the asset's outbox.
 * - Bulk jobs emit `asset.updated` per applied item and `job.finished` themselves.
 */
export async function fromObjectEvent(assets: AssetsService, e: ObjectEvent): Promise<AssetWebhookEvent[]> {
  const at = new Date(e.occurred_at);
  const data = {
    asset_id: e.asset_id,
    bucket_id: e.bucket_id,
    key: e.key,
    version: e.version,
    size: e.size,
    content_type: e.content_type,
    checksum_sha256: e.sha256,
  };
  const ev = (type: AssetWebhookEvent['type'], extra: Record<string, unknown> = {}): AssetWebhookEvent => ({
    id: stableId(`${type}:${e.event_id}`),
    type,
    accountId: e.account_id,
    occurredAt: at,
    data: { ...data, ...extra },
  });
  if (e.type === 'object.deleted') return [ev('asset.deleted')];
  const out = [ev(e.type === 'object.created' ? 'asset.created' : 'asset.updated')];
  const a = await assets.anyAsset(e.asset_id);
  if (a && a.accountId === e.account_id && a.currentVersion === e.version) {
    // After the created/updated event of the same change (same occurredAt): `order` 1.
    if (a.status === 'ready') out.push({ ...ev('asset.processed', { status: a.status, scan_status: a.scanStatus }), order: 1 });
    if (a.status === 'quarantined')
      out.push({ ...ev('asset.quarantined', { status: a.status, scan_status: a.scanStatus }), order: 1 });
  }
  return out;
}

/** `asset.updated` for a record change (its id from the change's, so a redelivery sends nothing new). */
export async function fromRecordChange(assets: AssetsService, c: RecordChange): Promise<AssetWebhookEvent[]> {
  const a: AssetDoc | null = await assets.anyAsset(c.asset_id);
  return [
    {
      id: stableId(`asset.updated:${c.event_id}`),
      type: 'asset.updated',
      accountId: c.account_id,
      occurredAt: new Date(c.occurred_at),
      data: {
        asset_id: c.asset_id,
        revision: c.revision,
        ...(a && a.accountId === c.account_id
          ? { bucket_id: a.bucketId, key: a.key, visibility: a.visibility, tags: a.tags, status: a.status }
          : {}),
      },
    },
  ];
}

export async function emitAll(emitter: AssetWebhookEmitter, events: AssetWebhookEvent[]): Promise<void> {
  for (const e of events) await emitter.emit(e);
}
