import type { BlobStore } from '../../../core/blobs/blob-store';
import type { AssetDoc, AssetModels } from '../records';

/** Replication of current bytes into an asset's replica regions (the assets worker runs it). */
export class Replication {
  constructor(private readonly d: { m: AssetModels; blobs: BlobStore; forget(assetId: string): void }) {}

  /**
   * Copies pending assets' current bytes into their replica regions; returns how many it finished.
   * Only committed assets (not `processing`): their home copy exists. A failed copy stays `pending`
   * and is retried next round, unless the home copy itself is gone (`failed`).
   */
  async replicateOnce(batch = 20): Promise<number> {
    const pending = await this.d.m.Asset.find(
      { replicationStatus: 'pending', status: { $in: ['ready', 'quarantined'] } },
      { outbox: 0 },
    )
      .limit(batch)
      .lean<AssetDoc[]>()
      .exec();
    let done = 0;
    for (const a of pending) {
      const sha = a.checksum;
      const copied: string[] = [];
      let failed = false;
      for (const r of a.replicaRegions) {
        try {
          await this.d.blobs.copy(a.homeRegion, r, sha);
          copied.push(r);
        } catch {
          failed = true;
        }
      }
      if (failed && (await this.d.blobs.stat(a.homeRegion, sha)) !== null) continue;
      await this.d.m.Asset.updateOne(
        { _id: a._id, replicationStatus: 'pending', checksum: sha },
        { $set: { replicationStatus: failed ? 'failed' : 'replicated', replicatedRegions: copied } },
      );
      this.d.forget(a._id);
      done++;
    }
    return done;
  }
}
