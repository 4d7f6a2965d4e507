import type { AssetDoc } from './model';

/** The public CDN address of an asset's current version (null when it is not publicly deliverable). */
export function publicUrl(
  a: Pick<AssetDoc, '_id' | 'visibility' | 'status' | 'currentVersion' | 'originalName'>,
  cdnUrl: string,
): string | null {
  if (a.visibility !== 'public' || a.status !== 'ready') return null;
  return `${cdnUrl}/assets/${a._id}/versions/${a.currentVersion}/${encodeURIComponent(a.originalName)}`;
}

/**
 * The asset record as REST clients see it (spec 2.3). The data plane (upload, replace) answers with
 * this; the GraphQL fragment `AssetFields` selects the same names through aliases.
 */
export function assetView(a: AssetDoc, cdnUrl: string) {
  return {
    id: a._id,
    bucket: a.bucketId,
    key: a.key,
    folder: a.folder,
    visibility: a.visibility,
    cache_control: a.cacheControl,
    metadata: a.metadata ?? {},
    original_name: a.originalName,
    tags: a.tags ?? [],
    mime_type: a.mimeType,
    type: a.type,
    size: a.size,
    checksum: a.checksum,
    checksum_sha256: a.checksum,
    status: a.status,
    scan_status: a.scanStatus,
    replication_status: a.replicationStatus,
    moderation_status: a.moderationStatus,
    quarantine_status: a.quarantineStatus,
    current_version: a.currentVersion,
    url: publicUrl(a, cdnUrl),
    created_at: new Date(a.createdAt).toISOString(),
    updated_at: new Date(a.updatedAt).toISOString(),
    revision: a.revision,
  };
}
