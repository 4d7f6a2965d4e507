import { ANALYTICS_RANGES, type AnalyticsRange, DEFAULT_ANALYTICS_RANGE } from './limits';

/**
 * Spec 8's analytics ranges: `1h` in minute buckets, `24h` in hour buckets, `7d` in day buckets
 * (summary) plus an hour timeseries, `30d` in day buckets; omitted or unknown → `7d`. Buckets are
 * UTC-aligned, oldest first, the last one the unit now in progress, and empty units are present
 * with zeros (a chart never has to guess a gap).
 */
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

interface Shape {
  unit: number;
  count: number;
}
/**
 * `7d`'s timeseries spans the same window as its day buckets (from the first day's midnight to
 * the hour in progress: 145–168 hours), so the two always add up to the same totals.
 */
const SHAPES: Record<AnalyticsRange, { buckets: Shape; timeseriesUnit?: number }> = {
  '1h': { buckets: { unit: MINUTE, count: 60 } },
  '24h': { buckets: { unit: HOUR, count: 24 } },
  '7d': { buckets: { unit: DAY, count: 7 }, timeseriesUnit: HOUR },
  '30d': { buckets: { unit: DAY, count: 30 } },
};

export const GRANULARITY: Record<number, string> = { [MINUTE]: 'minute', [HOUR]: 'hour', [DAY]: 'day' };

export function normalizeRange(range: unknown): AnalyticsRange {
  return ANALYTICS_RANGES.includes(range as AnalyticsRange) ? (range as AnalyticsRange) : DEFAULT_ANALYTICS_RANGE;
}

export interface Bucket {
  start: Date;
  requests: number;
  errors: number;
}

export interface AnalyticsView {
  range: AnalyticsRange;
  granularity: string;
  from: Date;
  to: Date;
  totals: { requests: number; errors: number };
  buckets: Bucket[];
  timeseries: Bucket[] | null;
  timeseriesGranularity: string | null;
}

function empty(shape: Shape, now: number): Bucket[] {
  const last = Math.floor(now / shape.unit) * shape.unit;
  return Array.from({ length: shape.count }, (_, i) => ({
    start: new Date(last - (shape.count - 1 - i) * shape.unit),
    requests: 0,
    errors: 0,
  }));
}

function fill(buckets: Bucket[], unit: number, samples: Array<{ at: Date; requests: number; errors: number }>): void {
  if (buckets.length === 0) return;
  const first = buckets[0].start.getTime();
  for (const s of samples) {
    const i = Math.floor((s.at.getTime() - first) / unit);
    if (i < 0 || i >= buckets.length) continue;
    buckets[i].requests += s.requests;
    buckets[i].errors += s.errors;
  }
}

/** The earliest instant a range reads (its first bucket). */
export function rangeStart(range: AnalyticsRange, now: number): Date {
  return empty(SHAPES[range].buckets, now)[0].start;
}

export function buildAnalytics(
  rangeParam: unknown,
  samples: Array<{ at: Date; requests: number; errors: number }>,
  now = Date.now(),
): AnalyticsView {
  const range = normalizeRange(rangeParam);
  const shape = SHAPES[range];
  const buckets = empty(shape.buckets, now);
  fill(buckets, shape.buckets.unit, samples);
  let timeseries: Bucket[] | null = null;
  if (shape.timeseriesUnit) {
    const unit = shape.timeseriesUnit;
    const count = Math.floor((now - buckets[0].start.getTime()) / unit) + 1;
    timeseries = empty({ unit, count }, now);
    fill(timeseries, unit, samples);
  }
  const totals = buckets.reduce((t, b) => ({ requests: t.requests + b.requests, errors: t.errors + b.errors }), {
    requests: 0,
    errors: 0,
  });
  return {
    range,
    granularity: GRANULARITY[shape.buckets.unit],
    from: buckets[0].start,
    to: new Date(now),
    totals,
    buckets,
    timeseries,
    timeseriesGranularity: shape.timeseriesUnit ? GRANULARITY[shape.timeseriesUnit] : null,
  };
}
