import { SystemDnsResolver } from '../../core/dns/resolver';
import { type DnsStandIn, startDnsStandIn } from '../../core/dns/stand-in-server';
import { isPlatformError } from '../../core/errors';
import { AuditService } from './audit';
import { normalizeAuditDomain, parseSelectors } from './audit-input';
import { AUDIT_CACHE_MAX, RateLimiter, TtlCache } from './audit-limits';
import { AUDIT_ZONES, PLATFORM_SPF_DOMAIN } from './testing/audit-zones';

const SLOW = {
  'slow.test': { behavior: 'timeout' as const },
  'slow-chain.test': {
    TXT: ['v=spf1 include:t1.slow.test include:t2.slow.test include:t3.slow.test include:t4.slow.test include:t5.slow.test -all'],
  },
  ...Object.fromEntries([1, 2, 3, 4, 5].map((i) => [`t${i}.slow.test`, { behavior: 'timeout' as const }])),
  'xn--bcher-kva.test': { TXT: ['v=spf1 -all'] },
};

let dns: DnsStandIn;
let resolver: SystemDnsResolver;
const codeOf = async (p: Promise<unknown>) => {
  try {
    await p;
    return null;
  } catch (e) {
    return isPlatformError(e) ? `${e.status} ${e.code}` : String(e);
  }
};
const service = (extra: Partial<ConstructorParameters<typeof AuditService>[0]> = {}) =>
  new AuditService({
    resolver,
    platformSpfDomain: PLATFORM_SPF_DOMAIN,
    limits: { maxLookups: 32, totalMs: 8_000, lookupMs: 300 },
    ...extra,
  });

beforeAll(async () => {
  dns = await startDnsStandIn({ zones: { ...AUDIT_ZONES, ...SLOW } });
  resolver = new SystemDnsResolver([dns.address]);
});
afterAll(() => dns.stop());

describe('audit input', () => {
  it.each([
    ['example.com', 'example.com'],
    ['Example.COM.', 'example.com'],
    ['Bücher.test', 'xn--bcher-kva.test'],
    ['ＥＸＡＭＰＬＥ.com', 'example.com'],
  ])('accepts %s as %s', (input, out) => expect(normalizeAuditDomain(input)).toBe(out));

  it.each([
    'https://a.com',
    'a.com/x',
    'a.com:25',
    'user@a.com',
    'u:p@a.com',
    '1.2.3.4',
    '[::1]',
    'localhost',
    '-a.com',
    'a..com',
    '',
    'a.123',
    'a.com?x=1',
  ])('refuses %s', async (input) =>
    expect(await codeOf(Promise.resolve().then(() => normalizeAuditDomain(input)))).toBe('400 invalid_domain'),
  );

  it('takes at most five distinct selectors', async () => {
    expect(parseSelectors('s2, S1,s1')).toEqual(['s1', 's2']);
    expect(parseSelectors(undefined)).toEqual([]);
    expect(await codeOf(Promise.resolve().then(() => parseSelectors('a,b,c,d,e,f')))).toBe('400 invalid_selectors');
    expect(await codeOf(Promise.resolve().then(() => parseSelectors('a,,b')))).toBe('400 invalid_selectors');
    expect(await codeOf(Promise.resolve().then(() => parseSelectors('a/b')))).toBe('400 invalid_selectors');
  });
});

describe('audit', () => {
  it('reports SPF, DMARC, MX, DKIM (tested and untested) and return-path records', async () => {
    const report = await service().audit({ domain: 'dmarc-ok.test', selectors: 'sel1,nokey', clientIp: 'r1' });
    expect(report.domain).toBe('dmarc-ok.test');
    const by = (kind: string, name?: string) => report.records.find((r) => r.kind === kind && (!name || r.name === name));
    expect(by('spf')).toMatchObject({ status: 'found', observed: ['v=spf1 -all'] });
    expect(by('dmarc')).toMatchObject({ name: '_dmarc.dmarc-ok.test', status: 'found' });
    expect(by('mx')).toMatchObject({ status: 'found', observed: ['10 mx1.mailbox.test'] });
    expect(by('dkim', 'sel1._domainkey.dmarc-ok.test')?.status).toBe('found');
    expect(by('dkim', 'nokey._domainkey.dmarc-ok.test')?.status).toBe('missing');
    expect(by('dkim', '*._domainkey.dmarc-ok.test')?.status).toBe('unknown');
    expect(by('return_path')?.status).toBe('pending');
    expect(report.spf).toMatchObject({ status: 'safe_merge', proposed: 'v=spf1 include:_spf.platform.test -all' });
    for (const r of report.records) expect(Object.keys(r).sort()).toEqual(['explanation', 'kind', 'name', 'observed', 'status']);
  });

  it('normalises a Unicode name before asking DNS', async () => {
    const report = await service().audit({ domain: 'Bücher.test', clientIp: 'r2' });
    expect(report.domain).toBe('xn--bcher-kva.test');
    expect(report.records[0].status).toBe('found');
  });

  it('a resolver failure is unknown, never safe', async () => {
    const report = await service().audit({ domain: 'servfail.test', clientIp: 'r3' });
    expect(report.spf.status).toBe('unknown');
    expect(report.spf.proposed).toBeNull();
    expect(report.records.find((r) => r.kind === 'mx')?.status).toBe('unknown');
  });

  it('limit: 12 requests per minute per client IP', async () => {
    let t = 1_000_000;
    const s = service({ rate: new RateLimiter(12, 60_000, () => t) });
    for (let i = 0; i < 12; i++) await s.audit({ domain: 'simple.test', clientIp: 'ip-a' });
    expect(await codeOf(s.audit({ domain: 'simple.test', clientIp: 'ip-a' }))).toBe('429 rate_limited');
    // Another address is not affected; a minute later the first is served again.
    await s.audit({ domain: 'simple.test', clientIp: 'ip-b' });
    t += 60_000;
    await s.audit({ domain: 'simple.test', clientIp: 'ip-a' });
  });

  it('limit: eight concurrent audits, the ninth is audit_busy', async () => {
    const s = service({ rate: new RateLimiter(1000) });
    const runs = Array.from({ length: 9 }, (_, i) => codeOf(s.audit({ domain: `slow.test`, selectors: `s${i}`, clientIp: 'c' })));
    const codes = await Promise.all(runs);
    expect(codes.filter((c) => c === '503 audit_busy')).toHaveLength(1);
    expect(codes.filter((c) => c === null)).toHaveLength(8);
    expect(s.inFlight).toBe(0);
  });

  it('limit: the whole audit stops at its time budget and says so', async () => {
    const s = service({ limits: { maxLookups: 32, totalMs: 1_000, lookupMs: 400 } });
    const started = Date.now();
    const report = await s.audit({ domain: 'slow-chain.test', clientIp: 't' });
    const elapsed = Date.now() - started;
    expect(elapsed).toBeLessThan(1_600);
    expect(report.spf.status).toBe('manual_review');
    expect(report.spf.reasons.join(' ')).toContain('time_budget');
  });

  it('limit: two seconds per lookup by default', async () => {
    const s = new AuditService({ resolver, platformSpfDomain: PLATFORM_SPF_DOMAIN });
    const started = Date.now();
    const report = await s.audit({ domain: 'slow.test', clientIp: 'p' });
    const elapsed = Date.now() - started;
    expect(report.spf.status).toBe('unknown');
    expect(report.spf.reasons[0]).toContain('timeout');
    expect(elapsed).toBeGreaterThanOrEqual(1_900);
    expect(elapsed).toBeLessThan(3_500);
  });

  it('limit: 32 DNS lookups per audit', async () => {
    const before = dns.queries.length;
    const s = service({ limits: { maxLookups: 32, totalMs: 8_000, lookupMs: 300 } });
    await s.audit({ domain: 'eleven.test', selectors: 'a,b,c,d,e', clientIp: 'l' });
    // eleven.test walks 12 names for SPF, plus DMARC, MX, five selectors and the platform's record.
    const sent = dns.queries.length - before;
    expect(sent).toBeLessThanOrEqual(32);
    const tight = service({ limits: { maxLookups: 5, totalMs: 8_000, lookupMs: 300 } });
    const b2 = dns.queries.length;
    const report = await tight.audit({ domain: 'nine.test', clientIp: 'l' });
    expect(dns.queries.length - b2).toBeLessThanOrEqual(5);
    expect(report.spf.status).not.toBe('safe_merge');
  });

  it('limit: answers repeat from a two-minute cache of at most 128 entries', async () => {
    let t = 5_000_000;
    const now = () => t;
    const s = service({ now, rate: new RateLimiter(10_000, 60_000, now), cache: new TtlCache(120_000, AUDIT_CACHE_MAX, now) });
    const count = () => dns.queries.filter((q) => q === 'TXT softfail.test').length;
    const first = await s.audit({ domain: 'softfail.test', clientIp: 'k' });
    const n = count();
    const again = await s.audit({ domain: 'softfail.test', clientIp: 'k' });
    expect(again).toBe(first);
    expect(count()).toBe(n);
    t += 119_000;
    await s.audit({ domain: 'softfail.test', clientIp: 'k' });
    expect(count()).toBe(n);
    t += 2_000;
    await s.audit({ domain: 'softfail.test', clientIp: 'k' });
    expect(count()).toBe(n + 1);

    const cache = new TtlCache<number>(120_000, AUDIT_CACHE_MAX, now);
    for (let i = 0; i < 129; i++) cache.set(`k${i}`, i);
    expect(cache.size).toBe(128);
    expect(cache.get('k0')).toBeUndefined();
    expect(cache.get('k128')).toBe(128);
  });
});
