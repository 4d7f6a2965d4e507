import { type Connection, type Model, Schema } from 'mongoose';
import { model } from '../../../core/mongo';

/**
 * Usage counters: one document per account and UTC day, `_id` `<accountId>:<YYYY-MM-DD>`, changed
 * only by `$inc` (with `$setOnInsert` of its account and day) — any writer may add to it without
 * reading it first, and a read of a range is a look-up of exact ids. The AI actions add
 * `aiActions` / `aiSpendMicros` with a direct `$inc` (`countAiCharge`) when a charged action
 * completes.
 */
export const USAGE_FIELDS = [
  'deliveryRequests',
  'deliveryBytes',
  'transformDeliveries',
  'transformsComputed',
  'transformBytes',
  'aiActions',
  'aiSpendMicros',
] as const;
export type UsageField = (typeof USAGE_FIELDS)[number];
export type UsageCounts = Record<UsageField, number>;

export interface UsageDayDoc extends Partial<UsageCounts> {
  _id: string;
  accountId: string;
  day: string;
}

const usageSchema = new Schema<UsageDayDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    day: { type: String, required: true },
    ...Object.fromEntries(USAGE_FIELDS.map((f) => [f, { type: Number, default: 0 }])),
  },
  { collection: 'asset_usage_days', versionKey: false },
);

export const usageModel = (conn: Connection): Model<UsageDayDoc> => model(conn, 'assets', 'UsageDay', usageSchema);

export const dayOf = (d: Date): string => d.toISOString().slice(0, 10);
export const usageId = (accountId: string, day: string): string => `${accountId}:${day}`;
export const zeroCounts = (): UsageCounts => Object.fromEntries(USAGE_FIELDS.map((f) => [f, 0])) as UsageCounts;

/** How often buffered counts are written, in ms. */
export const USAGE_FLUSH_MS = 1000;

/**
 * Counts from the hot paths (every CDN response, every computed derivative) are added up in memory
 * and written once a second: one `$inc` upsert per account and day however many requests there
 * were, instead of a write per request. A crash loses at most that second's counts (decision 0080).
 */
export class UsageCounters {
  private pending = new Map<string, { accountId: string; day: string; counts: Partial<UsageCounts> }>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

  constructor(readonly Usage: Model<UsageDayDoc>) {}

  add(accountId: string, counts: Partial<UsageCounts>, at: Date = new Date()): void {
    const day = dayOf(at);
    const id = usageId(accountId, day);
    const entry = this.pending.get(id) ?? { accountId, day, counts: {} };
    for (const [k, v] of Object.entries(counts) as [UsageField, number][]) entry.counts[k] = (entry.counts[k] ?? 0) + v;
    this.pending.set(id, entry);
    // Flushed from wherever counts arise (the CDN may run in a process without the workers).
    if (!this.timer) this.start();
  }

  /** Writes what is buffered (each account-day one upsert). */
  async flush(): Promise<void> {
    if (this.flushing) await this.flushing;
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    this.flushing = (async () => {
      for (const [id, e] of batch) {
        await this.Usage.updateOne(
          { _id: id },
          { $inc: e.counts, $setOnInsert: { accountId: e.accountId, day: e.day } },
          { upsert: true },
        ).catch(() => {
          // Put the counts back for the next flush rather than lose them on a blip.
          for (const [k, v] of Object.entries(e.counts) as [UsageField, number][])
            this.add(e.accountId, { [k]: v }, new Date(`${e.day}T12:00:00Z`));
        });
      }
    })();
    try {
      await this.flushing;
    } finally {
      this.flushing = undefined;
    }
  }

  /** The days `from`..`to` (inclusive, `YYYY-MM-DD`), found by their exact ids. */
  async days(accountId: string, from: string, to: string): Promise<{ day: string; counts: UsageCounts }[]> {
    await this.flush();
    const days: string[] = [];
    for (let d = new Date(`${from}T00:00:00Z`); dayOf(d) <= to; d = new Date(d.getTime() + 86_400_000)) days.push(dayOf(d));
    const docs = await this.Usage.find({ _id: { $in: days.map((d) => usageId(accountId, d)) } })
      .lean<UsageDayDoc[]>()
      .exec();
    const byDay = new Map(docs.map((d) => [d.day, d]));
    return days.map((day) => {
      const doc = byDay.get(day);
      const counts = zeroCounts();
      if (doc) for (const f of USAGE_FIELDS) counts[f] = doc[f] ?? 0;
      return { day, counts };
    });
  }

  start(): void {
    const tick = () => {
      this.timer = setTimeout(() => {
        void this.flush().finally(() => {
          if (this.timer) tick();
        });
      }, USAGE_FLUSH_MS);
      this.timer.unref();
    };
    tick();
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}

/** An AI action that was charged: one action and its price, on the day it completed. */
export interface AiCharge {
  accountId: string;
  priceMicros: number;
  at: Date;
}

/**
 * Adds one charged AI action to its account's day, written at once (not buffered: an AI action is
 * rare and the process that runs it may not serve the CDN). Callers count each charge once, on
 * the transition of the job to done; a crash between that transition and this write loses the one
 * count rather than doubling it.
 */
export async function countAiCharge(Usage: Model<UsageDayDoc>, c: AiCharge): Promise<void> {
  const day = dayOf(c.at);
  await Usage.updateOne(
    { _id: usageId(c.accountId, day) },
    { $inc: { aiActions: 1, aiSpendMicros: c.priceMicros }, $setOnInsert: { accountId: c.accountId, day } },
    { upsert: true },
  );
}
