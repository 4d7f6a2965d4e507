import { Readable } from 'node:stream';
import { notFound } from '../../../core/errors';
import { newId } from '../../../core/ids';
import { type OperationContext, type OperationEngine, willRetry } from '../../../core/operations/engine';
import type { Principal } from '../../../core/principal';
import { csvCell } from '../csv';
import type { BucketOpsModels, InventoryExportDoc, InventoryFormat } from './model';
import type { ObjstoreBuckets } from './objstore-buckets';
import { objectFilter, objectRow, type ObjectRow } from './query';
import type { AssetDoc, BucketDoc } from '../records';
import type { AssetsService } from '../storage';

export const INVENTORY_OPERATION = 'assets.inventory_export';
/** Objects read per page while the file is written. */
const PAGE = 500;
export const INVENTORY_COLUMNS = [
  'key',
  'asset_id',
  'size',
  'content_type',
  'sha256',
  'version',
  'visibility',
  'status',
  'updated_at',
] as const;

const exportNotFound = () => notFound('assets.inventory_export_not_found', 'inventory export not found');

const cells = (r: ObjectRow) => [
  r.key,
  r.assetId,
  r.size,
  r.contentType,
  r.sha256,
  r.version,
  r.visibility,
  r.status,
  r.updatedAt.toISOString(),
];
const line = (format: InventoryFormat, r: ObjectRow) =>
  format === 'csv'
    ? `${cells(r).map(csvCell).join(',')}\r\n`
    : `${JSON.stringify(Object.fromEntries(INVENTORY_COLUMNS.map((c, i) => [c, cells(r)[i]])))}\n`;

/**
 * Inventory exports (spec 2.5): a durable operation that lists the bucket's objects (optionally
 * under one literal prefix) by key into a CSV or JSONL file, staged and committed to the blob store
 * as a content-addressed blob in the bucket's home region; the record keeps its row count, size
 * and address, and `GET …/file` streams it. A run resumed after a crash writes the file again from
 * the start (same content → same address; the record is finished by one conditional update).
 */
export class InventoryExports {
  constructor(
    private readonly m: BucketOpsModels,
    private readonly assets: AssetsService,
    private readonly buckets: ObjstoreBuckets,
    private readonly engine: OperationEngine,
  ) {}

  async start(
    p: Principal | null,
    bucketId: string,
    format: InventoryFormat,
    prefix?: string | null,
  ): Promise<InventoryExportDoc> {
    const { accountId, keyId } = this.assets.writer(p);
    await this.buckets.require(accountId, bucketId);
    const now = new Date();
    const doc: InventoryExportDoc = {
      _id: newId(),
      accountId,
      bucketId,
      format,
      prefix: prefix || null,
      status: 'queued',
      rowCount: null,
      size: null,
      sha256: null,
      region: null,
      error: null,
      createdAt: now,
      updatedAt: now,
      finishedAt: null,
    };
    await this.m.InventoryExport.create(doc);
    await this.engine.enqueue({
      id: doc._id,
      accountId,
      projectId: accountId,
      resourceType: 'asset_bucket',
      resourceId: bucketId,
      operationType: INVENTORY_OPERATION,
      input: { exportId: doc._id },
      initiator: { keyId },
    });
    return doc;
  }

  async get(p: Principal | null, bucketId: string, id: string): Promise<InventoryExportDoc> {
    const { accountId } = this.assets.reader(p);
    await this.buckets.require(accountId, bucketId);
    const doc = await this.m.InventoryExport.findById(id).lean<InventoryExportDoc>().exec();
    if (!doc || doc.accountId !== accountId || doc.bucketId !== bucketId) throw exportNotFound();
    return doc;
  }

  /** The finished file's bytes (404 until it is written). */
  async file(p: Principal | null, bucketId: string, id: string): Promise<{ doc: InventoryExportDoc; body: Readable }> {
    const doc = await this.get(p, bucketId, id);
    if (doc.status !== 'succeeded' || !doc.sha256 || !doc.region) {
      throw notFound('assets.inventory_file_not_ready', 'the export has no file yet');
    }
    return { doc, body: this.assets.blobs.read(doc.region, doc.sha256) };
  }

  async run(ctx: OperationContext): Promise<{ rows: number }> {
    try {
      return await this.write(ctx);
    } catch (e) {
      // Retriable (or interrupted): the engine runs it again. Otherwise the record says it failed.
      if (ctx.signal.aborted || willRetry(ctx.op, e)) throw e;
      const { exportId } = ctx.op.input as { exportId: string };
      const at = new Date();
      await this.m.InventoryExport.updateOne(
        { _id: exportId, status: { $ne: 'succeeded' } },
        { $set: { status: 'failed', error: (e as Error).message, finishedAt: at, updatedAt: at } },
      );
      throw e;
    }
  }

  private async write(ctx: OperationContext): Promise<{ rows: number }> {
    const { exportId } = ctx.op.input as { exportId: string };
    const job = await this.m.InventoryExport.findById(exportId).lean<InventoryExportDoc>().exec();
    if (!job) throw new Error(`inventory export ${exportId} is missing`);
    if (job.status === 'succeeded') return { rows: job.rowCount ?? 0 };
    await this.m.InventoryExport.updateOne({ _id: job._id }, { $set: { status: 'running', updatedAt: new Date() } });
    const bucket = await this.assets.m.Bucket.findById(job.bucketId).lean<BucketDoc>().exec();
    if (!bucket) {
      await this.m.InventoryExport.updateOne(
        { _id: job._id },
        { $set: { status: 'failed', error: 'the bucket was deleted', finishedAt: new Date(), updatedAt: new Date() } },
      );
      return { rows: 0 };
    }
    let rows = 0;
    const filter = objectFilter(job.accountId, job.bucketId, { prefix: job.prefix });
    const assets = this.assets;
    const signal = ctx.signal;
    async function* lines(): AsyncGenerator<string> {
      if (job!.format === 'csv') yield `${INVENTORY_COLUMNS.join(',')}\r\n`;
      let after: string | null = null;
      for (;;) {
        if (signal.aborted) throw signal.reason ?? new Error('aborted');
        const page: AssetDoc[] = await assets.m.Asset.find(
          after === null ? filter : { ...filter, $and: [{ key: { $gt: after } }] },
          {
            outbox: 0,
            versions: 0,
            branches: 0,
          },
        )
          .sort({ key: 1 })
          .limit(PAGE)
          .lean<AssetDoc[]>()
          .exec();
        for (const a of page) {
          rows++;
          yield line(job!.format, objectRow(a));
        }
        if (page.length < PAGE) return;
        after = page[page.length - 1].key;
        await ctx.heartbeat();
      }
    }
    const staged = await this.assets.blobs.stage(Readable.from(lines()));
    try {
      await this.assets.blobs.commit(staged, bucket.homeRegion);
    } catch (e) {
      await this.assets.blobs.discard(staged);
      throw e;
    }
    const finishedAt = new Date();
    await this.m.InventoryExport.updateOne(
      { _id: job._id, status: { $ne: 'succeeded' } },
      {
        $set: {
          status: 'succeeded',
          rowCount: rows,
          size: staged.size,
          sha256: staged.sha256,
          region: bucket.homeRegion,
          finishedAt,
          updatedAt: finishedAt,
        },
      },
    );
    return { rows };
  }
}
