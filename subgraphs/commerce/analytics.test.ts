import { buildAnalytics, normalizeRange, rangeStart } from './analytics';

const NOW = Date.parse('2026-03-10T15:42:30.000Z');
const at = (iso: string, requests = 1, errors = 0) => ({ at: new Date(iso), requests, errors });

describe('analytics buckets (spec 8)', () => {
  it('omitted or unknown range is 7d', () => {
    expect(normalizeRange(undefined)).toBe('7d');
    expect(normalizeRange('90d')).toBe('7d');
    expect(normalizeRange('1h')).toBe('1h');
  });

  it('1h: 60 minute buckets, UTC-aligned, the last the minute in progress', () => {
    const v = buildAnalytics(
      '1h',
      [at('2026-03-10T15:42:01Z', 3, 1), at('2026-03-10T14:43:00Z'), at('2026-03-10T14:42:59Z')],
      NOW,
    );
    expect(v.buckets).toHaveLength(60);
    expect(v.buckets[59]).toEqual({ start: new Date('2026-03-10T15:42:00Z'), requests: 3, errors: 1 });
    expect(v.buckets[0]).toEqual({ start: new Date('2026-03-10T14:43:00Z'), requests: 1, errors: 0 });
    expect(v.totals).toEqual({ requests: 4, errors: 1 });
    expect(v.timeseries).toBeNull();
  });

  it('24h: hour buckets; 30d: day buckets starting at UTC midnight', () => {
    const d = buildAnalytics('24h', [at('2026-03-09T16:00:00Z'), at('2026-03-09T15:59:59Z')], NOW);
    expect(d.buckets).toHaveLength(24);
    expect(d.buckets[0].start).toEqual(new Date('2026-03-09T16:00:00Z'));
    expect(d.totals.requests).toBe(1);
    const m = buildAnalytics('30d', [at('2026-02-09T00:00:00Z'), at('2026-02-08T23:59:59Z')], NOW);
    expect(m.buckets).toHaveLength(30);
    expect(m.buckets[0].start).toEqual(new Date('2026-02-09T00:00:00Z'));
    expect(m.totals.requests).toBe(1);
  });

  it('7d: 7 day buckets and an hour timeseries over the same window (they add up alike)', () => {
    const v = buildAnalytics(
      '7d',
      [at('2026-03-04T00:00:00Z', 2), at('2026-03-10T15:00:00Z', 5, 5), at('2026-03-03T23:59:59Z')],
      NOW,
    );
    expect(v.buckets).toHaveLength(7);
    expect(v.buckets[0].start).toEqual(new Date('2026-03-04T00:00:00Z'));
    expect(v.timeseries).toHaveLength(6 * 24 + 16);
    expect(v.timeseries![0].start).toEqual(new Date('2026-03-04T00:00:00Z'));
    expect(v.timeseries![v.timeseries!.length - 1]).toEqual({ start: new Date('2026-03-10T15:00:00Z'), requests: 5, errors: 5 });
    expect(v.totals.requests).toBe(7);
    expect(v.timeseries!.reduce((a, b) => a + b.requests, 0)).toBe(7);
    expect(rangeStart('7d', NOW)).toEqual(new Date('2026-03-04T00:00:00Z'));
  });
});
