import { PlatformError, notFound } from '../../../core/errors';
import { newId } from '../../../core/ids';
import type { Principal } from '../../../core/principal';
import type { AssetsSettings } from '../settings';
import { objectEventEntry, type AssetDoc, type AssetModels, type JobDoc } from '../records';
import { requiredRevision } from '../revisions';
import type { Uploads } from '../uploads';

const assetNotFound = () => notFound('assets.not_found', 'asset not found');
const jobNotFound = () => notFound('assets.job_not_found', 'job not found');

/** What a delete job needs of the rest of Assets (the front service hands it these). */
export interface DeleteJobDeps {
  m: AssetModels;
  settings: AssetsSettings;
  uploads: Uploads;
  objectsTopic(): string;
  nudge(): void;
  forget(assetId: string): void;
  reader(p: Principal | null): Principal;
  writer(p: Principal | null): Principal;
  get(p: Principal | null, id: string): Promise<AssetDoc>;
  guardedUpdate(accountId: string, id: string, revision: number, requested: Record<string, unknown>): Promise<AssetDoc>;
}

/**
 * Delete jobs: a revision-checked request marks the asset `deleting`; a worker claims the job after
 * the delay (or when its lease lapsed), removes bytes no other version uses and the record, and
 * marks the job done with the `object.deleted` event in the same write.
 */
export class DeleteJobs {
  constructor(private readonly d: DeleteJobDeps) {}

  // ---- delete jobs --------------------------------------------------------------------------

  /** Revision-checked asynchronous delete: the asset goes `deleting` and a job removes its bytes. */
  async requestDelete(p: Principal | null, id: string, ifMatch: string | null | undefined): Promise<JobDoc> {
    const { accountId } = this.d.writer(p);
    const revision = requiredRevision(ifMatch);
    const current = await this.d.get(p, id);
    if (current.status === 'deleting') throw assetNotFound();
    const now = new Date();
    const job: JobDoc = {
      _id: newId(),
      accountId,
      type: 'delete',
      assetId: id,
      status: 'queued',
      error: null,
      priorStatus: current.status,
      leaseUntil: null,
      snapshot: null,
      outbox: [],
      createdAt: now,
      updatedAt: now,
      finishedAt: null,
    };
    await this.d.m.Job.create(job);
    try {
      await this.d.guardedUpdate(accountId, id, revision, {
        $set: { status: 'deleting', updatedAt: now },
        $inc: { revision: 1 },
      });
    } catch (e) {
      await this.d.m.Job.deleteOne({ _id: job._id });
      throw e;
    }
    return job;
  }

  async getJob(p: Principal | null, jobId: string): Promise<JobDoc> {
    const { accountId } = this.d.reader(p);
    const job = await this.d.m.Job.findOne({ _id: jobId, accountId }, { outbox: 0 }).lean<JobDoc>().exec();
    if (!job) throw jobNotFound();
    return job;
  }

  /** A queued job can be cancelled (the asset returns to its state); a running or finished one cannot. */
  async cancelJob(p: Principal | null, jobId: string): Promise<JobDoc> {
    const { accountId } = this.d.writer(p);
    const job = await this.getJob(p, jobId);
    const now = new Date();
    const cancelled = await this.d.m.Job.findOneAndUpdate(
      { _id: jobId, accountId, status: 'queued' },
      { $set: { status: 'cancelled', updatedAt: now, finishedAt: now } },
      { new: true, projection: { outbox: 0 } },
    )
      .lean<JobDoc>()
      .exec();
    if (!cancelled) {
      throw new PlatformError('assets.job_not_cancellable', 409, `the job is ${job.status} and can no longer be cancelled`, {
        status: job.status,
      });
    }
    this.d.forget(job.assetId);
    await this.d.m.Asset.updateOne(
      { _id: job.assetId, accountId, status: 'deleting' },
      { $set: { status: job.priorStatus ?? 'ready', updatedAt: now }, $inc: { revision: 1 } },
    );
    return cancelled;
  }

  /**
   * Runs one delete job: removes bytes no other version uses from every region, then the record,
   * then marks the job done with the `object.deleted` event in the same write. Safe to run again
   * after a crash at any point.
   */
  async runDeleteJob(job: JobDoc): Promise<void> {
    this.d.forget(job.assetId);
    const asset = await this.d.m.Asset.findOne({ _id: job.assetId, accountId: job.accountId }).lean<AssetDoc>().exec();
    let snapshot = job.snapshot;
    if (asset) {
      snapshot = {
        bucketId: asset.bucketId,
        key: asset.key,
        versions: asset.versions,
        homeRegion: asset.homeRegion,
        replicaRegions: asset.replicaRegions,
      };
      await this.d.m.Job.updateOne({ _id: job._id }, { $set: { snapshot } });
      const regions = [asset.homeRegion, ...asset.replicaRegions];
      for (const sha of new Set(asset.versions.map((v) => v.sha256)))
        await this.d.uploads.dropBlobIfUnused(sha, regions, asset._id);
      const res = await this.d.m.Asset.deleteOne({ _id: asset._id, status: 'deleting' });
      if (res.deletedCount === 1)
        await this.d.uploads.release(
          job.accountId,
          asset.versions.reduce((s, v) => s + v.size, 0),
        );
    }
    const now = new Date();
    const last = snapshot?.versions[snapshot.versions.length - 1];
    const events = snapshot
      ? [
          objectEventEntry(this.d.objectsTopic(), {
            type: 'object.deleted',
            asset: { _id: job.assetId, accountId: job.accountId, bucketId: snapshot.bucketId, key: snapshot.key },
            version: asset?.currentVersion ?? last?.number ?? 0,
            size: asset?.size ?? last?.size ?? 0,
            contentType: asset?.mimeType ?? last?.mimeType ?? null,
            sha256: null,
          }),
        ]
      : [];
    await this.d.m.Job.updateOne(
      { _id: job._id, status: 'running' },
      { $set: { status: 'succeeded', updatedAt: now, finishedAt: now, leaseUntil: null }, $push: { outbox: { $each: events } } },
    );
    this.d.nudge();
  }

  /** Claims the next due delete job (queued past the delay, or running with a lapsed lease). */
  async claimJob(leaseMs = 30_000): Promise<JobDoc | null> {
    const now = new Date();
    const due = new Date(now.getTime() - this.d.settings.ASSETS_DELETE_DELAY_MS);
    const candidates = await this.d.m.Job.find(
      {
        $or: [
          { status: 'queued', createdAt: { $lte: due } },
          { status: 'running', leaseUntil: { $lt: now } },
        ],
      },
      { _id: 1, status: 1, leaseUntil: 1 },
    )
      .sort({ createdAt: 1 })
      .limit(10)
      .lean<JobDoc[]>()
      .exec();
    for (const c of candidates) {
      const claimed = await this.d.m.Job.findOneAndUpdate(
        { _id: c._id, status: c.status, leaseUntil: c.leaseUntil },
        { $set: { status: 'running', leaseUntil: new Date(now.getTime() + leaseMs), updatedAt: now } },
        { new: true },
      )
        .lean<JobDoc>()
        .exec();
      if (claimed) return claimed;
    }
    return null;
  }
}
