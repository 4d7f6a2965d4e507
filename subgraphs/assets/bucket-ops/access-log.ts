import { newId } from '../../../core/ids';
import type { Logger } from '../../../core/logger';
import type { AccessOperation, BucketOpsModels } from './model';
import type { ObjstoreBuckets } from './objstore-buckets';
import type { AssetsService } from '../storage';

/** Entries waiting in memory at most; beyond it new ones are dropped (and counted), never blocking. */
export const ACCESS_LOG_MAX_PENDING = 50_000;
/** A flush starts when this many wait, or every `ACCESS_LOG_FLUSH_MS`. */
export const ACCESS_LOG_BATCH = 500;
export const ACCESS_LOG_FLUSH_MS = 500;

/** What a data-plane hook hands over: the request as answered, before the bucket is known. */
export interface RawAccess {
  /** Either the asset (CDN by id) or the bucket and key (website, upload answers). */
  assetId?: string;
  bucketId?: string;
  key?: string | null;
  operation: AccessOperation;
  status: number;
  bytesIn: number;
  bytesOut: number;
  requestId: string;
  accessKeyId: string | null;
  at: Date;
}

/** UTC day `YYYY-MM-DD`: the counters' document key. */
export const dayOf = (d: Date) => d.toISOString().slice(0, 10);
/** Top-level key prefix (`img/` of `img/cat.png`; `` for a key without `/`), escaped for a field name. */
export const prefixOf = (key: string | null | undefined) => {
  if (!key) return '';
  const i = key.indexOf('/');
  return i < 0 ? '' : key.slice(0, i + 1);
};
export const encodeField = (s: string) => encodeURIComponent(s).replace(/\./g, '%2E');
export const decodeField = (s: string) => decodeURIComponent(s);

/**
 * Access logs and request counters off the hot path (decision 0029): the CDN and upload hooks call
 * `record`, which only pushes onto an in-memory array (no I/O, no await, cannot throw into a
 * response). A timer flushes batches: the bucket of each asset is resolved (cached by id), entries
 * of object-store buckets become one unordered `insertMany`, and the day counters of each
 * bucket become one `$inc` upsert per bucket and day (`_id` = `<bucket>:<day>`). A failed flush is
 * logged and dropped: logs are best effort, responses never wait for or fail on them.
 */
export class AccessLogWriter {
  private pending: RawAccess[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private readonly assetBuckets = new Map<string, { bucketId: string; key: string; accountId: string } | null>();
  dropped = 0;

  constructor(
    private readonly m: BucketOpsModels,
    private readonly assets: AssetsService,
    private readonly buckets: ObjstoreBuckets,
    private readonly log: Logger,
  ) {}

  record(e: RawAccess): void {
    if (this.pending.length >= ACCESS_LOG_MAX_PENDING) {
      this.dropped++;
      return;
    }
    this.pending.push(e);
    if (this.pending.length >= ACCESS_LOG_BATCH) void this.flush();
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.flush(), ACCESS_LOG_FLUSH_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }

  /** Writes what waits (one flush at a time; a caller during a flush waits for it and the next). */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (!this.pending.length) return;
    const batch = this.pending;
    this.pending = [];
    this.flushing = this.write(batch)
      .catch((err) => this.log.warn({ err, entries: batch.length }, 'bucket access log flush failed'))
      .finally(() => {
        this.flushing = null;
      });
    await this.flushing;
  }

  private async bucketOfAsset(assetId: string) {
    if (this.assetBuckets.has(assetId)) return this.assetBuckets.get(assetId) ?? null;
    const a = await this.assets.m.Asset.findOne({ _id: assetId }, { bucketId: 1, key: 1, accountId: 1 }).lean().exec();
    const v = a ? { bucketId: a.bucketId, key: a.key, accountId: a.accountId } : null;
    if (this.assetBuckets.size > 20_000) this.assetBuckets.clear();
    this.assetBuckets.set(assetId, v);
    return v;
  }

  private async write(batch: RawAccess[]): Promise<void> {
    const logs = [];
    const days = new Map<string, { accountId: string; bucketId: string; day: string; inc: Record<string, number> }>();
    for (const e of batch) {
      let bucketId = e.bucketId;
      let key = e.key ?? null;
      if (!bucketId && e.assetId) {
        const found = await this.bucketOfAsset(e.assetId);
        if (!found) continue;
        bucketId = found.bucketId;
        key = found.key;
      }
      if (!bucketId) continue;
      const mark = await this.buckets.markOf(bucketId);
      if (!mark) continue; // only object-store buckets keep access logs
      logs.push({
        _id: newId(),
        accountId: mark.accountId,
        bucketId,
        operation: e.operation,
        key,
        status: e.status,
        bytesIn: e.bytesIn,
        bytesOut: e.bytesOut,
        requestId: e.requestId,
        accessKeyId: e.accessKeyId,
        at: e.at,
      });
      const day = dayOf(e.at);
      const id = `${bucketId}:${day}`;
      let d = days.get(id);
      if (!d) days.set(id, (d = { accountId: mark.accountId, bucketId, day, inc: {} }));
      const add = (f: string, n: number) => (d!.inc[f] = (d!.inc[f] ?? 0) + n);
      add('requests', 1);
      if (e.status >= 400) add('errors', 1);
      add('bytesIn', e.bytesIn);
      add('bytesOut', e.bytesOut);
      add(`prefixes.${encodeField(prefixOf(key)) || '%'}`, 1);
    }
    if (logs.length) await this.m.AccessLog.insertMany(logs, { ordered: false });
    if (days.size) {
      await this.m.BucketDay.bulkWrite(
        [...days.entries()].map(([id, d]) => ({
          updateOne: {
            filter: { _id: id },
            update: { $setOnInsert: { accountId: d.accountId, bucketId: d.bucketId, day: d.day }, $inc: d.inc },
            upsert: true,
          },
        })),
        { ordered: false },
      );
    }
  }
}
