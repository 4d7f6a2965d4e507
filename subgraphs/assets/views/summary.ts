import type { Principal } from '../../../core/principal';
import type { AssetsService } from '../storage';

/** Duplicate groups shown, largest waste first; ids shown per group (spec 8 leaves both open). */
export const DUPLICATE_GROUPS_MAX = 100;
export const DUPLICATE_IDS_MAX = 20;

export interface Group {
  key: string;
  assets: number;
  bytes: number;
}

export interface DuplicateGroup {
  checksum: string;
  assets: number;
  bytes: number;
  /** Bytes beyond the first copy (what de-duplicating would save). */
  wastedBytes: number;
  assetIds: string[];
}

export interface AssetSummary {
  assets: number;
  bytes: number;
  storedBytes: number;
  byType: Group[];
  byStatus: Group[];
  byVisibility: Group[];
  byBucket: Group[];
  duplicateGroups: DuplicateGroup[];
}

/**
 * `GET /summary`: the account's assets grouped by type, status, visibility and bucket (count and
 * current bytes), and groups of assets whose current bytes are identical (same SHA-256). A view,
 * not a hot path: `$group` aggregations over the account's assets (index `accountId`), and one
 * look-up of the duplicate groups' ids by the `checksum` index. Assets being deleted are left out.
 */
export async function summarise(assets: AssetsService, p: Principal | null): Promise<AssetSummary> {
  const { accountId } = assets.reader(p);
  const match = { $match: { accountId, status: { $ne: 'deleting' } } };
  const groupBy = async (field: string): Promise<Group[]> => {
    const rows = await assets.m.Asset.aggregate<{ _id: string | null; assets: number; bytes: number }>([
      match,
      { $group: { _id: `$${field}`, assets: { $sum: 1 }, bytes: { $sum: '$size' } } },
      { $sort: { _id: 1 } },
    ]).exec();
    return rows.map((r) => ({ key: r._id ?? '', assets: r.assets, bytes: r.bytes }));
  };
  const [byType, byStatus, byVisibility, byBucket] = [
    await groupBy('type'),
    await groupBy('status'),
    await groupBy('visibility'),
    await groupBy('bucketId'),
  ];
  const dups = await assets.m.Asset.aggregate<{ _id: string; assets: number; bytes: number; size: number }>([
    match,
    { $group: { _id: '$checksum', assets: { $sum: 1 }, bytes: { $sum: '$size' }, size: { $max: '$size' } } },
    { $match: { assets: { $gt: 1 } } },
  ]).exec();
  const groups = dups
    .map((d) => ({ checksum: d._id, assets: d.assets, bytes: d.bytes, wastedBytes: d.bytes - d.size, assetIds: [] as string[] }))
    .sort((a, b) => b.wastedBytes - a.wastedBytes || b.assets - a.assets || a.checksum.localeCompare(b.checksum))
    .slice(0, DUPLICATE_GROUPS_MAX);
  if (groups.length > 0) {
    const ids = await assets.m.Asset.find(
      { checksum: { $in: groups.map((g) => g.checksum) }, accountId, status: { $ne: 'deleting' } },
      { _id: 1, checksum: 1 },
    )
      .sort({ createdAt: 1, _id: 1 })
      .lean<{ _id: string; checksum: string }[]>()
      .exec();
    const byChecksum = new Map(groups.map((g) => [g.checksum, g]));
    for (const a of ids) {
      const g = byChecksum.get(a.checksum);
      if (g && g.assetIds.length < DUPLICATE_IDS_MAX) g.assetIds.push(a._id);
    }
  }
  const state = await assets.m.AccountState.findById(accountId, { usedBytes: 1 }).lean<{ usedBytes?: number }>().exec();
  return {
    assets: byType.reduce((s, g) => s + g.assets, 0),
    bytes: byType.reduce((s, g) => s + g.bytes, 0),
    storedBytes: state?.usedBytes ?? 0,
    byType,
    byStatus,
    byVisibility,
    byBucket,
    duplicateGroups: groups,
  };
}
