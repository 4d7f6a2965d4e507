import { SystemDnsResolver } from '../../core/dns/resolver';
import { type DnsStandIn, startDnsStandIn } from '../../core/dns/stand-in-server';
import { LookupBudget } from './lookup-budget';
import { analyzeSpf, isSpfRecord, mergeSpf, parseSpf } from './spf';
import { AUDIT_ZONES, PLATFORM_SPF_DOMAIN, SPF_CASES } from './testing/audit-zones';

// Short per-lookup limit so the timeout zones answer quickly; the count limits are the spec's.
const LIMITS = { maxLookups: 32, totalMs: 4_000, lookupMs: 400 };

let dns: DnsStandIn;
let resolver: SystemDnsResolver;

beforeAll(async () => {
  dns = await startDnsStandIn({ zones: AUDIT_ZONES });
  resolver = new SystemDnsResolver([dns.address]);
});
afterAll(() => dns.stop());

describe('SPF analysis against a real DNS server on loopback (RFC 7208)', () => {
  it('serves at least 40 zones', () => {
    expect(Object.keys(AUDIT_ZONES).length).toBeGreaterThanOrEqual(40);
    expect(SPF_CASES.length).toBeGreaterThanOrEqual(40);
  });

  it.each(SPF_CASES.map((c) => [c.domain, c] as const))('%s', async (_d, c) => {
    const result = await analyzeSpf(new LookupBudget(resolver, LIMITS), c.domain, PLATFORM_SPF_DOMAIN);
    expect(result.status).toBe(c.status);
    if (c.lookupCount !== undefined) expect(result.lookupCount).toBe(c.lookupCount);
    if (c.voidLookups !== undefined) expect(result.voidLookups).toBe(c.voidLookups);
    if (c.proposed !== undefined) expect(result.proposed).toBe(c.proposed);
    if (c.reason) expect(result.reasons.join(' | ')).toContain(c.reason);
    if (result.status !== 'safe_merge') expect(result.proposed).toBeNull();
    else {
      // A proposal is exactly one SPF record that keeps every term of the current one.
      const proposed = result.proposed as string;
      expect(isSpfRecord(proposed)).toBe(true);
      expect(parseSpf(proposed).errors).toEqual([]);
      expect(
        proposed.split(/\s+/).filter((t) => t.toLowerCase() === `include:${PLATFORM_SPF_DOMAIN}`).length,
      ).toBeLessThanOrEqual(1);
      const current = result.observed[0];
      if (current) for (const term of current.trim().split(/\s+/)) expect(proposed.split(/\s+/)).toContain(term);
    }
  });

  it('reads an answer too large for UDP over TCP', async () => {
    const before = dns.queries.length;
    const result = await analyzeSpf(new LookupBudget(resolver, LIMITS), 'long.test', PLATFORM_SPF_DOMAIN);
    expect(result.observed[0]).toContain('ip4:10.0.39.0/24');
    expect(result.proposed?.endsWith('include:_spf.platform.test -all')).toBe(true);
    // UDP (truncated) then TCP: the server saw the question twice.
    expect(dns.queries.slice(before).filter((q) => q === 'TXT long.test').length).toBeGreaterThanOrEqual(2);
  });

  it('counts a lookup over the audit budget as a failure, never as safe', async () => {
    const result = await analyzeSpf(new LookupBudget(resolver, { ...LIMITS, maxLookups: 3 }), 'nine.test', PLATFORM_SPF_DOMAIN);
    expect(result.status).toBe('manual_review');
    expect(result.reasons.join(' ')).toContain('lookup_budget');
  });
});

describe('parseSpf and mergeSpf', () => {
  it.each([
    ['v=spf1 -all', []],
    ['v=spf1 a:example.com/24//64 mx/30 ip4:10.0.0.0/8 ip6:::1 ~all', []],
    ['v=spf1 include:', ['include needs a domain']],
    ['v=spf1 all:x', ['all takes no argument']],
    ['v=spf1 ip4:10.0.0.0/33', ['bad IPv4 CIDR length']],
    ['v=spf1 =x', ['not a known mechanism']],
    ['spf1 -all', ['does not start with']],
  ])('%s', (record, errors) => {
    const parsed = parseSpf(record);
    expect(parsed.errors.length).toBe(errors.length);
    errors.forEach((e, i) => expect(parsed.errors[i]).toContain(e));
  });

  it.each([
    ['v=spf1 -all', 'v=spf1 include:p.test -all'],
    ['v=spf1 mx', 'v=spf1 mx include:p.test'],
    ['v=spf1 mx redirect=x.test', 'v=spf1 mx include:p.test redirect=x.test'],
    ['v=spf1 redirect=x.test exp=e.test', 'v=spf1 include:p.test redirect=x.test exp=e.test'],
    ['  v=spf1   a   ~all ', 'v=spf1 a include:p.test ~all'],
  ])('merge %s', (record, merged) => {
    expect(mergeSpf(record, 'p.test')).toBe(merged);
  });
});
