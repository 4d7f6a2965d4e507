import { decodeCursor } from '../../../core/cursors';
import { PlatformError } from '../../../core/errors';
import { findPage } from '../../../core/keyset';
import type { Principal } from '../../../core/principal';
import { dayOf, decodeField } from './access-log';
import type { AccessLogDoc, BucketDayDoc, BucketOpsModels } from './model';
import type { ObjstoreBuckets } from './objstore-buckets';
import type { AssetsService } from '../storage';

/** Spec 8: the default analytics window is the previous 30 days. */
export const ANALYTICS_DEFAULT_DAYS = 30;
/** The longest window a `start` may open (day documents read one by one). */
export const ANALYTICS_MAX_DAYS = 366;
/** Most active prefixes answered. */
export const TOP_PREFIXES = 10;
export const ACCESS_LOG_PAGE_MAX = 100;
const DAY_MS = 86_400_000;

export interface BucketAnalytics {
  start: Date;
  end: Date;
  storedBytes: number;
  objectCount: number;
  requests: number;
  errors: number;
  bytesIn: number;
  bytesOut: number;
  topPrefixes: { prefix: string; requests: number }[];
  days: { day: string; requests: number; errors: number; bytesIn: number; bytesOut: number }[];
}

/**
 * Bucket analytics and access-log reads. Request figures come from the per-bucket, per-day counter
 * documents (`$inc`-grown by the access-log writer), each read by its exact `_id` — never a scan of
 * the logs. Stored bytes and object count are the bucket's objects as they are now.
 */
/** A cursor this list gave, else 422 `validation_failed` (the access-log list's answer to a foreign or forged one). */
function decodeOurs(cursor: string, binding: string): Record<string, unknown> {
  try {
    return decodeCursor(cursor, binding);
  } catch {
    throw new PlatformError('validation_failed', 422, 'cursor is not one this list gave');
  }
}

export class BucketAnalyticsReader {
  constructor(
    private readonly m: BucketOpsModels,
    private readonly assets: AssetsService,
    private readonly buckets: ObjstoreBuckets,
  ) {}

  async analytics(p: Principal | null, bucketId: string, start?: string | null, now = new Date()): Promise<BucketAnalytics> {
    const { accountId } = this.assets.reader(p);
    await this.buckets.require(accountId, bucketId);
    const from = start ? new Date(start) : new Date(now.getTime() - ANALYTICS_DEFAULT_DAYS * DAY_MS);
    if (Number.isNaN(from.getTime())) throw new PlatformError('validation_failed', 422, 'start must be an RFC 3339 time');
    if (from > now) throw new PlatformError('assets.invalid_window', 422, 'start is in the future');
    if (now.getTime() - from.getTime() > ANALYTICS_MAX_DAYS * DAY_MS) {
      throw new PlatformError('assets.invalid_window', 422, `start is at most ${ANALYTICS_MAX_DAYS} days ago`);
    }
    const ids: string[] = [];
    for (let d = Date.parse(dayOf(from)); d <= now.getTime(); d += DAY_MS) ids.push(`${bucketId}:${dayOf(new Date(d))}`);
    const docs: BucketDayDoc[] = [];
    for (const id of ids) {
      const doc = await this.m.BucketDay.findById(id).lean<BucketDayDoc>().exec();
      if (doc) docs.push(doc);
    }
    const prefixes = new Map<string, number>();
    const out: BucketAnalytics = {
      start: from,
      end: now,
      storedBytes: 0,
      objectCount: 0,
      requests: 0,
      errors: 0,
      bytesIn: 0,
      bytesOut: 0,
      topPrefixes: [],
      days: [],
    };
    for (const d of docs) {
      out.requests += d.requests ?? 0;
      out.errors += d.errors ?? 0;
      out.bytesIn += d.bytesIn ?? 0;
      out.bytesOut += d.bytesOut ?? 0;
      out.days.push({
        day: d.day,
        requests: d.requests ?? 0,
        errors: d.errors ?? 0,
        bytesIn: d.bytesIn ?? 0,
        bytesOut: d.bytesOut ?? 0,
      });
      for (const [k, n] of Object.entries(d.prefixes ?? {})) {
        const prefix = k === '%' ? '' : decodeField(k);
        prefixes.set(prefix, (prefixes.get(prefix) ?? 0) + n);
      }
    }
    out.topPrefixes = [...prefixes.entries()]
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .slice(0, TOP_PREFIXES)
      .map(([prefix, requests]) => ({ prefix, requests }));
    // The bucket's objects now: an index-prefix read (`asset_key`) of sizes only.
    const stock = await this.assets.m.Asset.find({ accountId, bucketId }, { size: 1 }).lean<{ size: number }[]>().exec();
    out.objectCount = stock.length;
    out.storedBytes = stock.reduce((n, a) => n + (a.size ?? 0), 0);
    return out;
  }

  /** Access log entries, newest first, `limit` a page with an opaque cursor. */
  async accessLogs(
    p: Principal | null,
    bucketId: string,
    limit = 50,
    cursor?: string | null,
  ): Promise<{ items: AccessLogDoc[]; nextCursor: string }> {
    const { accountId } = this.assets.reader(p);
    await this.buckets.require(accountId, bucketId);
    const binding = `access-logs:${bucketId}`;
    const page = await findPage<AccessLogDoc>(
      this.m.AccessLog,
      { bucketId },
      { field: 'at', binding, position: { value: 'at', id: 'id', form: 'iso' }, decode: decodeOurs, limit, cursor },
    );
    return { items: page.items, nextCursor: page.nextCursor ?? '' };
  }
}
