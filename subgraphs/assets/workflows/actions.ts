import { PlatformError } from '../../../core/errors';
import type { Principal } from '../../../core/principal';
import { etagOf } from '../revisions';
import type { AssetsService } from '../storage';

/**
 * The asset changes a workflow step or an approved automation tool call makes, through the same
 * AssetsService methods the API uses (scope, account and revision rules included). Each is safe to
 * perform twice: a step re-run after a crash must not change the outcome.
 */

/** Revision races with a person editing the asset at the same moment: re-read and try again. */
const RACE_RETRIES = 3;

async function withFreshRevision<T>(fn: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof PlatformError && e.status === 412) || i >= RACE_RETRIES) throw e;
    }
  }
}

/** Adds and removes tags (a set operation: performing it again changes nothing). */
export async function tagAsset(assets: AssetsService, p: Principal, assetId: string, add: string[], remove: string[] = []) {
  return withFreshRevision(async () => {
    const current = await assets.get(p, assetId);
    const drop = new Set(remove);
    const tags = [...new Set([...(current.tags ?? []), ...add])].filter((t) => !drop.has(t));
    const a = await assets.setTags(p, assetId, etagOf(current.revision), tags);
    return { asset_id: a._id, tags: a.tags, revision: a.revision };
  });
}

/** Moves the asset to another bucket of the account (a no-op when it is there already). */
export async function moveAsset(assets: AssetsService, p: Principal, assetId: string, bucketId: string) {
  return withFreshRevision(async () => {
    const current = await assets.get(p, assetId);
    if (current.bucketId === bucketId) return { asset_id: current._id, bucket: current.bucketId, revision: current.revision };
    const a = await assets.patch(p, assetId, etagOf(current.revision), { bucket: bucketId });
    return { asset_id: a._id, bucket: a.bucketId, revision: a.revision };
  });
}

/** Materialises a named transformation (the derivative id is a hash of source and spec: idempotent). */
export async function transformAsset(assets: AssetsService, p: Principal, assetId: string, transformation: string) {
  const d = await assets.transforms.transform(p, assetId, transformation, null);
  return { asset_id: assetId, derivative_id: d._id, spec: d.spec, format: d.format, width: d.width, height: d.height };
}
