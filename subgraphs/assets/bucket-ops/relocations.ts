import { createHash } from 'node:crypto';
import { PlatformError, notFound } from '../../../core/errors';
import { newId } from '../../../core/ids';
import { isDuplicateKey } from '../../../core/mongo';
import { type OperationContext, type OperationEngine, willRetry } from '../../../core/operations/engine';
import type { Principal } from '../../../core/principal';
import type { BucketOpsModels, RelocationDoc } from './model';
import type { ObjstoreBuckets } from './objstore-buckets';
import { type AssetDoc, type BucketDoc, SCOPES } from '../records';
import type { AssetsService } from '../storage';

/** Operation type of a relocation on the kernel engine. */
export const RELOCATION_OPERATION = 'assets.bucket_relocation';
/** Passes over the bucket after its home switched, for objects written during the copy. */
const CATCH_UP_PASSES = 3;
/** How often a running pass writes its progress. */
const PROGRESS_EVERY_MS = 250;

const relocationNotFound = () => notFound('assets.relocation_not_found', 'relocation not found');

type MovableAsset = Pick<
  AssetDoc,
  '_id' | 'accountId' | 'revision' | 'homeRegion' | 'versions' | 'replicaRegions' | 'replicatedRegions'
>;

/**
 * Bucket relocation (spec 4.3 `POST /buckets/{id}/relocations`): a durable operation that copies
 * every version's bytes of every object from its region root into the target root, verifies each
 * copy (size and SHA-256 read back from the target), and only then switches the object's home —
 * one conditional update on `{_id, accountId, revision}` (the `asset_revision` unique index), so an
 * object replaced during the copy is copied again rather than switched half-way. Old copies stay in
 * the old root, so a delivery that decided on the old region a moment ago still finds its bytes:
 * objects stay readable throughout. After every object moved, the bucket's home switches (new
 * uploads land in the new root) and the bucket is swept again for objects written meanwhile.
 *
 * Crash safety: every step is idempotent (a blob already in the target is kept, a switched object
 * is skipped), so the engine's resumed attempt simply runs the passes again; counters only grow
 * with `$max`, never double.
 */
export class Relocations {
  constructor(
    private readonly m: BucketOpsModels,
    private readonly assets: AssetsService,
    private readonly buckets: ObjstoreBuckets,
    private readonly engine: OperationEngine,
  ) {}

  async start(p: Principal | null, bucketId: string, region: string): Promise<RelocationDoc> {
    const { accountId, keyId } = this.assets.writer(p, SCOPES.admin);
    const { bucket } = await this.buckets.require(accountId, bucketId);
    if (!this.assets.settings.ASSETS_REGIONS.includes(region)) {
      throw new PlatformError('assets.unknown_region', 422, `unknown region ${region}`, {
        regions: this.assets.settings.ASSETS_REGIONS,
      });
    }
    if (region === bucket.homeRegion) {
      throw new PlatformError('assets.same_region', 422, `the bucket already lives in ${region}`);
    }
    const now = new Date();
    const doc: RelocationDoc = {
      _id: newId(),
      accountId,
      bucketId,
      fromRegion: bucket.homeRegion,
      toRegion: region,
      status: 'queued',
      activeBucket: bucketId,
      objectsTotal: 0,
      objectsCopied: 0,
      bytesCopied: 0,
      objectsSwitched: 0,
      error: null,
      createdAt: now,
      updatedAt: now,
      startedAt: null,
      finishedAt: null,
    };
    try {
      await this.m.Relocation.create(doc);
    } catch (e) {
      if (isDuplicateKey(e)) {
        throw new PlatformError('assets.relocation_in_progress', 409, 'a relocation of this bucket is already running');
      }
      throw e;
    }
    await this.engine.enqueue({
      id: doc._id,
      accountId,
      projectId: accountId,
      resourceType: 'asset_bucket',
      resourceId: bucketId,
      operationType: RELOCATION_OPERATION,
      input: { relocationId: doc._id },
      initiator: { keyId },
    });
    return doc;
  }

  async get(p: Principal | null, bucketId: string, id: string): Promise<RelocationDoc> {
    const { accountId } = this.assets.reader(p);
    await this.buckets.require(accountId, bucketId);
    const doc = await this.m.Relocation.findById(id).lean<RelocationDoc>().exec();
    if (!doc || doc.accountId !== accountId || doc.bucketId !== bucketId) throw relocationNotFound();
    return doc;
  }

  // ---- the executor ---------------------------------------------------------------------------

  async run(ctx: OperationContext): Promise<{ objects: number }> {
    const { relocationId } = ctx.op.input as { relocationId: string };
    const job = await this.m.Relocation.findById(relocationId).lean<RelocationDoc>().exec();
    if (!job) throw new Error(`relocation ${relocationId} is missing`);
    if (job.status === 'succeeded' || job.status === 'failed') return { objects: job.objectsSwitched };
    const set = (fields: Partial<RelocationDoc>) =>
      this.m.Relocation.updateOne({ _id: job._id }, { $set: { ...fields, updatedAt: new Date() } });
    await set({ status: 'copying', startedAt: job.startedAt ?? new Date() });
    try {
      // Pass 1 moves what was there; the home switches; later passes catch objects written meanwhile.
      let moved = await this.pass(ctx, job);
      await set({ status: 'switching' });
      const b = await this.assets.m.Bucket.findOne({ _id: job.bucketId, accountId: job.accountId }).lean<BucketDoc>().exec();
      // The new home is no longer a replica of itself.
      const replicas = (b?.replicationPolicy?.regions ?? []).filter((r) => r !== job.toRegion);
      await this.assets.m.Bucket.updateOne(
        { _id: job.bucketId, accountId: job.accountId, homeRegion: job.fromRegion },
        {
          $set: { homeRegion: job.toRegion, replicationPolicy: { regions: replicas }, updatedAt: new Date() },
          $inc: { revision: 1 },
        },
      );
      for (let i = 0; i < CATCH_UP_PASSES; i++) moved += await this.pass(ctx, job);
      const finishedAt = new Date();
      await this.m.Relocation.updateOne(
        { _id: job._id },
        { $set: { status: 'succeeded', finishedAt, updatedAt: finishedAt }, $unset: { activeBucket: 1 } },
      );
      return { objects: moved };
    } catch (e) {
      // A lost lease, a shutdown or a retriable failure: the engine runs it again, the record stays open.
      if (ctx.signal.aborted || willRetry(ctx.op, e)) throw e;
      const finishedAt = new Date();
      await this.m.Relocation.updateOne(
        { _id: job._id },
        {
          $set: { status: 'failed', error: (e as Error).message, finishedAt, updatedAt: finishedAt },
          $unset: { activeBucket: 1 },
        },
      );
      throw e;
    }
  }

  /** Copies, verifies and switches every object of the bucket not yet in the target; returns how many it switched. */
  private async pass(ctx: OperationContext, job: RelocationDoc): Promise<number> {
    // A background scan of the bucket's objects (index prefix `asset_key`): never on a request path.
    const objects = await this.assets.m.Asset.find(
      { accountId: job.accountId, bucketId: job.bucketId },
      { _id: 1, accountId: 1, revision: 1, homeRegion: 1, versions: 1, replicaRegions: 1, replicatedRegions: 1 },
    )
      .sort({ key: 1 })
      .lean<MovableAsset[]>()
      .exec();
    const done = objects.filter((a) => a.homeRegion === job.toRegion).length;
    await this.m.Relocation.updateOne(
      { _id: job._id },
      { $max: { objectsTotal: objects.length, objectsSwitched: done, objectsCopied: done } },
    );
    let switched = 0;
    let copied = done;
    let bytes = 0;
    let lastReport = Date.now();
    for (const a of objects) {
      if (a.homeRegion === job.toRegion) continue;
      if (ctx.signal.aborted) throw ctx.signal.reason ?? new Error('aborted');
      let current: MovableAsset | null = a;
      // Copy, verify, switch on the revision seen; a change in between (a replace) means again.
      for (let tries = 0; current && current.homeRegion !== job.toRegion && tries < 5; tries++) {
        bytes += await this.copyVerified(current, job.toRegion);
        const res = await this.assets.m.Asset.updateOne(
          { _id: current._id, accountId: current.accountId, revision: current.revision },
          {
            $set: {
              homeRegion: job.toRegion,
              replicaRegions: current.replicaRegions.filter((r) => r !== job.toRegion),
              replicatedRegions: current.replicatedRegions.filter((r) => r !== job.toRegion),
            },
          },
        );
        if (res.modifiedCount === 1) {
          switched++;
          this.assets.forget(current._id);
          break;
        }
        current = await this.assets.m.Asset.findById(current._id, {
          _id: 1,
          accountId: 1,
          revision: 1,
          homeRegion: 1,
          versions: 1,
          replicaRegions: 1,
          replicatedRegions: 1,
        })
          .lean<MovableAsset>()
          .exec();
      }
      copied++;
      // Progress a few times a second, not per object (the engine renews the lease on its own).
      if (copied === objects.length || Date.now() - lastReport > PROGRESS_EVERY_MS) {
        lastReport = Date.now();
        await this.m.Relocation.updateOne(
          { _id: job._id },
          {
            $max: { objectsCopied: copied, objectsSwitched: copied },
            $inc: { bytesCopied: bytes },
            $set: { updatedAt: new Date() },
          },
        );
        bytes = 0;
      }
    }
    return switched;
  }

  /** Copies every version into `to` and reads it back: size and SHA-256 must match. Returns bytes copied. */
  private async copyVerified(a: MovableAsset, to: string): Promise<number> {
    let total = 0;
    const seen = new Set<string>();
    for (const v of a.versions) {
      if (seen.has(v.sha256)) continue;
      seen.add(v.sha256);
      const already = (await this.assets.blobs.stat(to, v.sha256)) === v.size;
      if (!already) {
        const from = await this.assets.locate(a as AssetDoc, v.sha256);
        // No copy anywhere (a version whose bytes a delete job already removed): nothing to move.
        if (!from) continue;
        await this.assets.blobs.copy(from, to, v.sha256);
        total += v.size;
      }
      const hash = createHash('sha256');
      let size = 0;
      for await (const chunk of this.assets.blobs.read(to, v.sha256)) {
        hash.update(chunk as Buffer);
        size += (chunk as Buffer).length;
      }
      if (size !== v.size || hash.digest('hex') !== v.sha256) {
        await this.assets.blobs.remove(to, v.sha256);
        throw new PlatformError('assets.relocation_verify_failed', 500, `copy of ${v.sha256} in ${to} did not verify`);
      }
    }
    return total;
  }
}
