import type { Principal } from '../../../core/principal';
import type { ObjstoreBuckets } from './objstore-buckets';
import type { AssetDoc } from '../records';
import type { AssetsService } from '../storage';

/** Spec 8: a bounded query returns at most 1,000 rows. */
export const QUERY_MAX_ROWS = 1000;
export const QUERY_DEFAULT_ROWS = 100;

export interface QueryInput {
  prefix?: string | null;
  suffix?: string | null;
  contentType?: string | null;
  minSize?: number | null;
  maxSize?: number | null;
  updatedAfter?: string | null;
  limit?: number | null;
}

export interface ObjectRow {
  key: string;
  assetId: string;
  size: number;
  contentType: string;
  sha256: string;
  version: number;
  visibility: string;
  status: string;
  updatedAt: Date;
}

export const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** A row of the bucket's object listing (query answers and inventory files share it). */
export const objectRow = (a: AssetDoc): ObjectRow => ({
  key: a.key,
  assetId: a._id,
  size: a.size,
  contentType: a.mimeType,
  sha256: a.checksum,
  version: a.currentVersion,
  visibility: a.visibility,
  status: a.status,
  updatedAt: a.updatedAt,
});

/** The filter of a bucket's objects by literal key prefix (and suffix), sizes, type and time. */
export function objectFilter(accountId: string, bucketId: string, q: QueryInput): Record<string, unknown> {
  const f: Record<string, unknown> = { accountId, bucketId };
  if (q.prefix || q.suffix) f.key = { $regex: `^${escapeRegex(q.prefix ?? '')}.*${escapeRegex(q.suffix ?? '')}$`, $options: 's' };
  if (q.contentType) f.mimeType = q.contentType;
  if (q.minSize != null || q.maxSize != null) {
    f.size = { ...(q.minSize != null ? { $gte: q.minSize } : {}), ...(q.maxSize != null ? { $lte: q.maxSize } : {}) };
  }
  if (q.updatedAfter) f.updatedAt = { $gt: new Date(q.updatedAfter) };
  return f;
}

/**
 * The bounded query (spec 2.5/8): objects of one bucket matching literal filters, ordered by key,
 * at most `limit` (≤ 1,000) rows; `truncated` says more matched. Interactive and capped: the
 * database answers at most limit + 1 documents, sizes and keys only.
 */
export class BucketQuery {
  constructor(
    private readonly assets: AssetsService,
    private readonly buckets: ObjstoreBuckets,
  ) {}

  async run(p: Principal | null, bucketId: string, q: QueryInput): Promise<{ rows: ObjectRow[]; truncated: boolean }> {
    const { accountId } = this.assets.reader(p);
    await this.buckets.require(accountId, bucketId);
    const limit = Math.min(q.limit ?? QUERY_DEFAULT_ROWS, QUERY_MAX_ROWS);
    const found = await this.assets.m.Asset.find(objectFilter(accountId, bucketId, q), { outbox: 0, versions: 0, branches: 0 })
      .sort({ key: 1 })
      .limit(limit + 1)
      .lean<AssetDoc[]>()
      .exec();
    return { rows: found.slice(0, limit).map(objectRow), truncated: found.length > limit };
  }
}
