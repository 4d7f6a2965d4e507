import type { DnsResolver } from '../../core/dns/resolver';
import { normalizeAuditDomain, parseSelectors } from './audit-input';
import { AUDIT_MAX_CONCURRENT, auditBusy, RateLimiter, TtlCache } from './audit-limits';
import { type AuditAnswer, type AuditLimits, DEFAULT_AUDIT_LIMITS, LookupBudget } from './lookup-budget';
import { analyzeSpf, type SpfStatus } from './spf';

/**
 * The public domain audit (spec 4.8): reads the domain's SPF, DMARC, MX and the DKIM selectors
 * given, and says what the platform would need. It only asks DNS; it never fetches a URL and never
 * changes a record, and it saves nothing.
 */
export type RecordKind = 'spf' | 'dmarc' | 'mx' | 'dkim' | 'return_path';
/** `found`, `missing`, `multiple`, `unknown` (not checked, or the lookup failed), `pending` (known after the sending domain is added). */
export type RecordStatus = 'found' | 'missing' | 'multiple' | 'unknown' | 'pending';

export interface AuditRecord {
  kind: RecordKind;
  name: string;
  status: RecordStatus;
  observed: string[];
  explanation: string;
}

export interface AuditReport {
  domain: string;
  checkedAt: Date;
  records: AuditRecord[];
  spf: { status: SpfStatus; lookupCount: number; reasons: string[]; proposed: string | null };
  disclaimer: string;
}

export const AUDIT_DISCLAIMER =
  'This audit reads public DNS only. It changes no record, fetches no URL and saves nothing. ' +
  'Review every proposal before publishing it; the exact DKIM and return-path records appear when you add the sending domain to an authenticated workspace.';

export interface AuditOptions {
  resolver: DnsResolver;
  /** The platform's SPF include domain (`include:<this>`). */
  platformSpfDomain: string;
  limits?: AuditLimits;
  maxConcurrent?: number;
  rate?: RateLimiter;
  cache?: TtlCache<AuditReport>;
  now?: () => number;
}

const failed = (a: AuditAnswer<unknown>) => (a.outcome === 'error' ? a.error : null);

export class AuditService {
  private running = 0;
  private readonly rate: RateLimiter;
  private readonly cache: TtlCache<AuditReport>;
  private readonly limits: AuditLimits;
  private readonly maxConcurrent: number;
  private readonly now: () => number;

  constructor(private readonly opts: AuditOptions) {
    this.now = opts.now ?? Date.now;
    this.rate = opts.rate ?? new RateLimiter(undefined, undefined, this.now);
    this.cache = opts.cache ?? new TtlCache<AuditReport>(undefined, undefined, this.now);
    this.limits = opts.limits ?? DEFAULT_AUDIT_LIMITS;
    this.maxConcurrent = opts.maxConcurrent ?? AUDIT_MAX_CONCURRENT;
  }

  /** Audits in flight in this process. */
  get inFlight(): number {
    return this.running;
  }

  /**
   * Rate limit first (every request counts, valid or not), then the input, then the cache, then a
   * slot among the concurrent audits.
   */
  async audit(input: { domain: unknown; selectors?: unknown; clientIp: string }): Promise<AuditReport> {
    this.rate.take(input.clientIp);
    const domain = normalizeAuditDomain(input.domain);
    const selectors = parseSelectors(input.selectors);
    const key = `${domain}|${selectors.join(',')}`;
    const cached = this.cache.get(key);
    if (cached) return cached;
    if (this.running >= this.maxConcurrent) throw auditBusy();
    this.running++;
    try {
      const report = await this.run(domain, selectors);
      this.cache.set(key, report);
      return report;
    } finally {
      this.running--;
    }
  }

  private async run(domain: string, selectors: string[]): Promise<AuditReport> {
    const dns = new LookupBudget(this.opts.resolver, this.limits, this.now);
    const platform = this.opts.platformSpfDomain;
    const [spf, dmarc, mx, dkim] = await Promise.all([
      analyzeSpf(dns, domain, platform),
      dns.txt(`_dmarc.${domain}`),
      dns.mx(domain),
      Promise.all(selectors.map(async (s) => [s, await dns.txt(`${s}._domainkey.${domain}`)] as const)),
    ]);
    const top = await dns.txt(domain); // answered from this audit's memo
    const records: AuditRecord[] = [
      spfRecord(domain, top, spf.observed, platform),
      dmarcRecord(domain, dmarc),
      mxRecord(domain, mx),
    ];
    for (const [selector, answer] of dkim) records.push(dkimRecord(domain, selector, answer));
    records.push({
      kind: 'dkim',
      name: `*._domainkey.${domain}`,
      status: 'unknown',
      observed: [],
      explanation: selectors.length
        ? `Only the selectors given (${selectors.join(', ')}) were checked; any other DKIM selector is untested.`
        : 'No DKIM selector was given, so none was checked. Pass selectors=… to check existing keys.',
    });
    records.push({
      kind: 'return_path',
      name: domain,
      status: 'pending',
      observed: [],
      explanation:
        'The platform gives the exact return-path (bounce) CNAME and DKIM records when you add this sending domain; the public audit generates no keys.',
    });
    return {
      domain,
      checkedAt: new Date(this.now()),
      records,
      spf: { status: spf.status, lookupCount: spf.lookupCount, reasons: spf.reasons, proposed: spf.proposed },
      disclaimer: AUDIT_DISCLAIMER,
    };
  }
}

function spfRecord(domain: string, top: AuditAnswer<string>, observed: string[], platform: string): AuditRecord {
  const base = { kind: 'spf' as const, name: domain, observed };
  const err = failed(top);
  if (err) return { ...base, status: 'unknown', explanation: `The TXT lookup failed (${err}); the SPF policy is unknown.` };
  if (observed.length === 0)
    return { ...base, status: 'missing', explanation: `No SPF record. Publish one that includes ${platform}.` };
  if (observed.length > 1)
    return {
      ...base,
      status: 'multiple',
      explanation: 'More than one SPF record: receivers treat that as a permanent error. Combine them into one.',
    };
  return { ...base, status: 'found', explanation: 'One SPF record. See spf for the lookup count and the merged record.' };
}

function dmarcRecord(domain: string, answer: AuditAnswer<string>): AuditRecord {
  const name = `_dmarc.${domain}`;
  const err = failed(answer);
  if (err) return { kind: 'dmarc', name, status: 'unknown', observed: [], explanation: `The TXT lookup failed (${err}).` };
  const observed = answer.records.filter((t) => /^v=DMARC1\s*(;|$)/i.test(t.trim()));
  if (observed.length === 0) {
    return {
      kind: 'dmarc',
      name,
      status: 'missing',
      observed,
      explanation: 'No DMARC policy. Start with "v=DMARC1; p=none; rua=mailto:…" to watch reports before enforcing.',
    };
  }
  if (observed.length > 1)
    return {
      kind: 'dmarc',
      name,
      status: 'multiple',
      observed,
      explanation: 'More than one DMARC record: receivers ignore them all. Keep one.',
    };
  const policy = /(?:^|;)\s*p\s*=\s*([a-z]+)/i.exec(observed[0])?.[1]?.toLowerCase() ?? 'none';
  return {
    kind: 'dmarc',
    name,
    status: 'found',
    observed,
    explanation: `DMARC policy p=${policy}. Keep it; mail from the platform aligns once SPF and DKIM are set.`,
  };
}

function mxRecord(domain: string, answer: AuditAnswer<{ exchange: string; priority: number }>): AuditRecord {
  const err = failed(answer);
  if (err) return { kind: 'mx', name: domain, status: 'unknown', observed: [], explanation: `The MX lookup failed (${err}).` };
  const observed = [...answer.records].sort((a, b) => a.priority - b.priority).map((m) => `${m.priority} ${m.exchange}`);
  if (!observed.length)
    return {
      kind: 'mx',
      name: domain,
      status: 'missing',
      observed,
      explanation: 'No MX records: the domain receives no mail. Sending does not need any.',
    };
  return {
    kind: 'mx',
    name: domain,
    status: 'found',
    observed,
    explanation: 'Existing mailbox MX records stay in place: sending through the platform does not touch them.',
  };
}

function dkimRecord(domain: string, selector: string, answer: AuditAnswer<string>): AuditRecord {
  const name = `${selector}._domainkey.${domain}`;
  const err = failed(answer);
  if (err) return { kind: 'dkim', name, status: 'unknown', observed: [], explanation: `The TXT lookup failed (${err}).` };
  const observed = answer.records.filter((t) => /(^|;)\s*(v=DKIM1|p=)/i.test(t));
  if (!observed.length)
    return { kind: 'dkim', name, status: 'missing', observed, explanation: `No DKIM key at selector ${selector}.` };
  return {
    kind: 'dkim',
    name,
    status: 'found',
    observed,
    explanation: `A DKIM key at selector ${selector}; keep it while the old provider still sends.`,
  };
}
