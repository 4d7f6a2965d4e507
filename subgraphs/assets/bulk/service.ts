import { decodeCursor, encodeCursor } from '../../../core/cursors';
import { badRequest, notFound } from '../../../core/errors';
import { newId } from '../../../core/ids';
import { isDuplicateKey } from '../../../core/mongo';
import type { OperationContext, OperationEngine } from '../../../core/operations/engine';
import type { Principal } from '../../../core/principal';
import type { AssetDoc, JobDoc } from '../records';
import type { AssetsService } from '../storage';
import { type AssetWebhookEmitter, noWebhooks, stableId } from '../webhooks';
import { BULK_ACTIONS, type BulkChunkDoc, type BulkItem, type BulkJobDoc, type BulkModels, type BulkResult } from './model';

/** Items one bulk request carries at most. */
export const BULK_MAX_ITEMS = 10_000;
/** Items per chunk: one chunk's results are one write. */
export const BULK_CHUNK_SIZE = 500;
/** Bulk marks an asset keeps (`<job id>:<index>` of the last bulk items applied to it). */
export const BULK_MARKS_KEPT = 20;
/** Operation type on the kernel engine. */
export const BULK_OPERATION_TYPE = 'assets.bulk';
/** Results per page of `GET /bulk/{id}`: at most (and by default) 1,000. */
export const BULK_RESULTS_PAGE_MAX = 1000;
const TAG_MAX = 128;

const bulkNotFound = () => notFound('assets.job_not_found', 'job not found');

/** The delete job a bulk delete item makes: named by the item, so a replay finds, not repeats, it. */
export const bulkDeleteJobId = (jobId: string, index: number) => stableId(`bulk-delete:${jobId}:${index}`);

type RawAsset = Pick<AssetDoc, '_id' | 'accountId' | 'revision' | 'status' | 'bucketId' | 'key'> & { bulkMarks?: string[] };

/** A page of a job's per-item results; an item not applied yet shows as `pending`. */
export interface BulkResultsPage {
  items: (BulkResult | (Omit<BulkResult, 'status'> & { status: 'pending' }))[];
  nextCursor: string;
}

export interface BulkItemInput {
  assetId: string;
  revision: number;
  action: string;
  visibility?: string | null;
  tags?: string[] | null;
}

/**
 * Bulk jobs (spec 2.3/4.3): revisioned items for `delete`, `visibility`, `add_tags`, run as one
 * durable operation on the kernel engine. Each item is one conditional update of its asset on
 * `{_id, accountId, revision}` (an exact unique index), so it applies only while the asset still has
 * the revision the caller saw: a stale item fails with 412 in the results, the others apply.
 *
 * Crash safety without transactions: the same update pushes the item's mark (`<job>:<index>`) into
 * the asset's `bulkMarks`. A run resumed after a crash finds the mark of an item already applied
 * when it reads the chunk's assets, sends no update for it and records success. A chunk's updates
 * go as one ordered `bulkWrite`; its results are written once, and the job's counters advance
 * chunk by chunk under a guard.
 */
export class BulkJobs {
  constructor(
    readonly m: BulkModels,
    private readonly assets: AssetsService,
    private readonly engine: OperationEngine,
    /** Where item events go (the webhooks' outbox). */
    private readonly emitter: AssetWebhookEmitter = noWebhooks,
  ) {}

  private validate(items: BulkItemInput[]): BulkItem[] {
    if (!Array.isArray(items) || items.length < 1 || items.length > BULK_MAX_ITEMS)
      throw badRequest('validation_failed', `items holds 1 to ${BULK_MAX_ITEMS} items`);
    return items.map((it, index) => {
      const where = { index };
      if (!(BULK_ACTIONS as readonly string[]).includes(it.action))
        throw badRequest('validation_failed', `items[${index}].action must be one of ${BULK_ACTIONS.join(', ')}`, where);
      if (!it.assetId || typeof it.assetId !== 'string')
        throw badRequest('validation_failed', `items[${index}].asset_id is required`, where);
      if (!Number.isInteger(it.revision) || it.revision < 1)
        throw badRequest('validation_failed', `items[${index}].revision must be a positive integer`, where);
      const item: BulkItem = { index, assetId: it.assetId, revision: it.revision, action: it.action as BulkItem['action'] };
      if (it.action === 'visibility') {
        if (it.visibility !== 'public' && it.visibility !== 'private')
          throw badRequest('validation_failed', `items[${index}].visibility must be public or private`, where);
        item.visibility = it.visibility;
      } else if (it.visibility !== undefined && it.visibility !== null)
        throw badRequest('validation_failed', `items[${index}].visibility belongs to the visibility action`, where);
      if (it.action === 'add_tags') {
        const tags = [...new Set((it.tags ?? []).map((t) => String(t).trim()).filter(Boolean))];
        if (!tags.length || tags.some((t) => t.length > TAG_MAX))
          throw badRequest(
            'validation_failed',
            `items[${index}].tags needs 1 or more tags of at most ${TAG_MAX} characters`,
            where,
          );
        item.tags = tags;
      } else if (it.tags !== undefined && it.tags !== null)
        throw badRequest('validation_failed', `items[${index}].tags belongs to the add_tags action`, where);
      return item;
    });
  }

  /** Accepts the items and enqueues the job; 202 with `job_id`, `status`, `status_url`. */
  async submit(p: Principal | null, input: BulkItemInput[]): Promise<BulkJobDoc> {
    const { accountId } = this.assets.writer(p);
    const items = this.validate(input);
    const now = new Date();
    const jobId = newId();
    const chunks: BulkChunkDoc[] = [];
    for (let n = 0; n * BULK_CHUNK_SIZE < items.length; n++) {
      chunks.push({
        _id: `${jobId}:${n}`,
        jobId,
        accountId,
        number: n,
        items: items.slice(n * BULK_CHUNK_SIZE, (n + 1) * BULK_CHUNK_SIZE),
        results: [],
        done: false,
      });
    }
    const job: BulkJobDoc = {
      _id: jobId,
      accountId,
      status: 'queued',
      total: items.length,
      succeeded: 0,
      failed: 0,
      chunkCount: chunks.length,
      chunksDone: 0,
      error: null,
      createdAt: now,
      updatedAt: now,
      startedAt: null,
      finishedAt: null,
    };
    // Chunks first, then the job, then the operation: whatever exists when a crash interrupts is
    // either invisible (no job) or complete enough to run.
    await this.m.Chunk.insertMany(chunks, { ordered: false });
    await this.m.Job.create(job);
    await this.engine.enqueue({
      id: jobId,
      accountId,
      // Assets are account-scoped (spec 5.2): the account stands where a project would.
      projectId: accountId,
      resourceType: 'asset_bulk_job',
      resourceId: jobId,
      operationType: BULK_OPERATION_TYPE,
      input: { jobId },
      initiator: p ? { keyId: p.keyId } : null,
    });
    return job;
  }

  async get(p: Principal | null, id: string): Promise<BulkJobDoc> {
    const { accountId } = this.assets.reader(p);
    const job = await this.m.Job.findById(id).lean<BulkJobDoc>().exec();
    if (!job || job.accountId !== accountId) throw bulkNotFound();
    return job;
  }

  /** One page of a job's results (read with `get`: the account's own) in item order. */
  async results(job: BulkJobDoc, limit?: number | null, cursor?: string | null): Promise<BulkResultsPage> {
    const n = limit ?? BULK_RESULTS_PAGE_MAX;
    if (!Number.isInteger(n) || n < 1 || n > BULK_RESULTS_PAGE_MAX)
      throw badRequest('validation_failed', `limit is 1 to ${BULK_RESULTS_PAGE_MAX}`);
    const binding = `bulk:${job._id}`;
    const from = cursor ? decodeCursor<{ i: number }>(cursor, binding).i : 0;
    const to = Math.min(job.total, from + n);
    const out: BulkResultsPage['items'] = [];
    for (let c = Math.floor(from / BULK_CHUNK_SIZE); c * BULK_CHUNK_SIZE < to; c++) {
      const chunk = await this.m.Chunk.findById(`${job._id}:${c}`).lean<BulkChunkDoc>().exec();
      if (!chunk) break;
      const byIndex = new Map(chunk.results.map((r) => [r.index, r]));
      for (const it of chunk.items) {
        if (it.index < from || it.index >= to) continue;
        out.push(
          (chunk.done && byIndex.get(it.index)) || {
            index: it.index,
            assetId: it.assetId,
            action: it.action,
            status: 'pending',
            statusCode: 0,
            errorCode: null,
            errorMessage: null,
            revision: null,
            deleteJobId: null,
          },
        );
      }
    }
    return { items: out, nextCursor: to < job.total ? encodeCursor({ i: to }, binding) : '' };
  }

  // ---- the executor ---------------------------------------------------------------------------

  /** Runs (or resumes) a job: chunk by chunk, each item on its own revision. */
  async run(ctx: OperationContext): Promise<{ succeeded: number; failed: number }> {
    const { jobId } = ctx.op.input as { jobId: string };
    let job = await this.m.Job.findById(jobId).lean<BulkJobDoc>().exec();
    if (!job) throw new Error(`bulk job ${jobId} is missing`);
    const now = new Date();
    await this.m.Job.updateOne(
      { _id: jobId, status: { $in: ['queued', 'running'] } },
      { $set: { status: 'running', startedAt: job.startedAt ?? now, updatedAt: now } },
    );
    for (let n = 0; n < job.chunkCount; n++) {
      if (ctx.signal.aborted) throw ctx.signal.reason ?? new Error('aborted');
      let chunk = await this.m.Chunk.findById(`${jobId}:${n}`).lean<BulkChunkDoc>().exec();
      if (!chunk) throw new Error(`bulk job ${jobId} chunk ${n} is missing`);
      if (!chunk.done) {
        const results = await this.applyChunk(job, chunk, ctx.signal);
        await this.m.Chunk.updateOne({ _id: chunk._id, done: false }, { $set: { results, done: true } });
        chunk = { ...chunk, results, done: true };
      }
      const ok = chunk.results.filter((r) => r.status === 'succeeded').length;
      await this.m.Job.updateOne(
        { _id: jobId, chunksDone: n },
        { $inc: { chunksDone: 1, succeeded: ok, failed: chunk.results.length - ok }, $set: { updatedAt: new Date() } },
      );
    }
    job = (await this.m.Job.findById(jobId).lean<BulkJobDoc>().exec())!;
    const finishedAt = job.finishedAt ?? new Date();
    // The event before the status: a crash in between emits it again, under the same id (no second delivery).
    await this.emitter.emit({
      id: stableId(`job.finished:${jobId}`),
      type: 'job.finished',
      accountId: job.accountId,
      occurredAt: finishedAt,
      data: { job_id: jobId, kind: 'bulk', status: 'succeeded', total: job.total, succeeded: job.succeeded, failed: job.failed },
    });
    await this.m.Job.updateOne(
      { _id: jobId, status: 'running' },
      { $set: { status: 'succeeded', finishedAt, updatedAt: finishedAt } },
    );
    return { succeeded: job.succeeded, failed: job.failed };
  }

  /**
   * One chunk: read its assets, send every applicable item as one ordered `bulkWrite` of
   * conditional updates (items of one asset thus apply in order, each on the revision the previous
   * one made), read the assets again, and judge each item by its mark: present → applied (now or
   * by an earlier run), absent → why not (missing 404, being deleted 404, else stale 412).
   */
  private async applyChunk(job: BulkJobDoc, chunk: BulkChunkDoc, signal: AbortSignal): Promise<BulkResult[]> {
    const col = this.assets.m.Asset.collection;
    const ids = [...new Set(chunk.items.map((it) => it.assetId))];
    const readAll = async () =>
      new Map(
        (
          (await col
            .find(
              { _id: { $in: ids as never[] } },
              { projection: { accountId: 1, revision: 1, status: 1, bulkMarks: 1, bucketId: 1, key: 1 } },
            )
            .toArray()) as unknown as RawAsset[]
        )
          .filter((a) => a.accountId === job.accountId)
          .map((a) => [String(a._id), a]),
      );
    const markOf = (it: BulkItem) => `${job._id}:${it.index}`;
    const before = await readAll();
    const now = new Date();
    const ops = chunk.items
      .filter((it) => {
        const a = before.get(it.assetId);
        return a && a.status !== 'deleting' && !a.bulkMarks?.includes(markOf(it));
      })
      .map((it) => {
        const set: Record<string, unknown> = { updatedAt: now };
        const update: Record<string, unknown> = {
          $set: set,
          $inc: { revision: 1 },
          $push: { bulkMarks: { $each: [markOf(it)], $slice: -BULK_MARKS_KEPT } },
        };
        if (it.action === 'visibility') set.visibility = it.visibility;
        if (it.action === 'delete') set.status = 'deleting';
        if (it.action === 'add_tags') update.$addToSet = { tags: { $each: it.tags } };
        // The filter's keys are exactly the `asset_revision` unique index: no scan per item.
        return { updateOne: { filter: { _id: it.assetId as never, accountId: job.accountId, revision: it.revision }, update } };
      });
    if (signal.aborted) throw signal.reason ?? new Error('aborted');
    if (ops.length) await col.bulkWrite(ops, { ordered: true });
    const after = await readAll();
    const results: BulkResult[] = [];
    for (const it of chunk.items) results.push(await this.judge(job, it, before.get(it.assetId), after.get(it.assetId)));
    return results;
  }

  /** An item's result from its asset before and after the chunk's writes. */
  private async judge(
    job: BulkJobDoc,
    it: BulkItem,
    before: RawAsset | undefined,
    after: RawAsset | undefined,
  ): Promise<BulkResult> {
    const mark = `${job._id}:${it.index}`;
    const base = { index: it.index, assetId: it.assetId, action: it.action, deleteJobId: null };
    const fail = (statusCode: number, errorCode: string, errorMessage: string, revision: number | null = null): BulkResult => ({
      ...base,
      status: 'failed',
      statusCode,
      errorCode,
      errorMessage,
      revision,
    });
    const done = async (a: RawAsset | undefined, revision: number | null): Promise<BulkResult> => {
      let deleteJobId: string | null = null;
      if (it.action === 'delete') deleteJobId = await this.ensureDeleteJob(job, it, before);
      else if (a)
        await this.emitter.emit({
          id: stableId(`asset.updated:${mark}`),
          type: 'asset.updated',
          accountId: job.accountId,
          occurredAt: new Date(),
          data: { asset_id: it.assetId, bucket_id: a.bucketId, key: a.key, revision, change: it.action, job_id: job._id },
        });
      this.assets.forget(it.assetId);
      return { ...base, status: 'succeeded', statusCode: 200, errorCode: null, errorMessage: null, revision, deleteJobId };
    };
    if (after?.bulkMarks?.includes(mark))
      return done(after, before?.bulkMarks?.includes(mark) ? after.revision : it.revision + 1);
    if (!after) {
      // A delete this job applied whose delete job has since removed the record (a resumed run).
      if (it.action === 'delete' && (await this.assets.m.Job.exists({ _id: bulkDeleteJobId(job._id, it.index) })))
        return done(undefined, null);
      return fail(404, 'assets.not_found', 'asset not found');
    }
    if (after.status === 'deleting') return fail(404, 'assets.not_found', 'asset not found');
    return fail(412, 'assets.revision_mismatch', 'the item revision is not the current one', after.revision);
  }

  /** The delete job of a bulk delete item (as `DELETE /{assetID}` makes one); created once. */
  private async ensureDeleteJob(job: BulkJobDoc, it: BulkItem, before: RawAsset | undefined): Promise<string> {
    const id = bulkDeleteJobId(job._id, it.index);
    const now = new Date();
    const doc: JobDoc = {
      _id: id,
      accountId: job.accountId,
      type: 'delete',
      assetId: it.assetId,
      status: 'queued',
      error: null,
      priorStatus: !before || before.status === 'deleting' ? 'ready' : before.status,
      leaseUntil: null,
      snapshot: null,
      outbox: [],
      createdAt: now,
      updatedAt: now,
      finishedAt: null,
    };
    try {
      await this.assets.m.Job.create(doc);
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
    }
    return id;
  }
}
