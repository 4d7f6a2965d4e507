import type { DnsAnswer, DnsFailure, DnsResolver, MxRecord } from '../../core/dns/resolver';

/**
 * One audit's view of DNS, bounded as spec 8 says: at most 32 lookups, eight seconds in all, two
 * seconds each. A lookup over the count or past the deadline is not sent and answers a failure
 * (`lookup_budget` / `time_budget`), which the analysis treats like any failed lookup: never safe.
 * The same question asked twice in one audit is sent once (SPF and the record list both read the
 * domain's TXT).
 */
export const AUDIT_MAX_LOOKUPS = 32;
export const AUDIT_TOTAL_MS = 8_000;
export const AUDIT_LOOKUP_MS = 2_000;

export type AuditFailure = DnsFailure | 'lookup_budget' | 'time_budget';
export type AuditAnswer<T> =
  | { outcome: 'ok'; records: T[] }
  | { outcome: 'nxdomain' | 'nodata'; records: [] }
  | { outcome: 'error'; records: []; error: AuditFailure };

export interface AuditLimits {
  maxLookups: number;
  totalMs: number;
  lookupMs: number;
}

export const DEFAULT_AUDIT_LIMITS: AuditLimits = {
  maxLookups: AUDIT_MAX_LOOKUPS,
  totalMs: AUDIT_TOTAL_MS,
  lookupMs: AUDIT_LOOKUP_MS,
};

export class LookupBudget {
  private sent = 0;
  private readonly deadline: number;
  private readonly memo = new Map<string, Promise<AuditAnswer<unknown>>>();

  constructor(
    private readonly dns: DnsResolver,
    private readonly limits: AuditLimits = DEFAULT_AUDIT_LIMITS,
    private readonly now: () => number = Date.now,
  ) {
    this.deadline = now() + limits.totalMs;
  }

  /** DNS queries sent so far in this audit. */
  get lookups(): number {
    return this.sent;
  }

  private ask<T>(key: string, send: (timeoutMs: number) => Promise<DnsAnswer<T>>): Promise<AuditAnswer<T>> {
    const known = this.memo.get(key);
    if (known) return known as Promise<AuditAnswer<T>>;
    const remaining = this.deadline - this.now();
    let answer: Promise<AuditAnswer<T>>;
    if (remaining <= 0) answer = Promise.resolve({ outcome: 'error', records: [], error: 'time_budget' });
    else if (this.sent >= this.limits.maxLookups)
      answer = Promise.resolve({ outcome: 'error', records: [], error: 'lookup_budget' });
    else {
      this.sent++;
      const timeoutMs = Math.min(this.limits.lookupMs, remaining);
      answer = send(timeoutMs).then((a) =>
        // A lookup cut short by the audit's deadline (not its own limit) is a time-budget failure.
        a.outcome === 'error' && a.error === 'timeout' && timeoutMs < this.limits.lookupMs
          ? { outcome: 'error', records: [], error: 'time_budget' }
          : a,
      );
    }
    this.memo.set(key, answer);
    return answer;
  }

  txt(name: string): Promise<AuditAnswer<string>> {
    return this.ask(`TXT ${name.toLowerCase()}`, (timeoutMs) => this.dns.txt(name, { timeoutMs }));
  }

  mx(name: string): Promise<AuditAnswer<MxRecord>> {
    return this.ask(`MX ${name.toLowerCase()}`, (timeoutMs) => this.dns.mx(name, { timeoutMs }));
  }

  address(name: string, type: 'A' | 'AAAA'): Promise<AuditAnswer<string>> {
    return this.ask(`${type} ${name.toLowerCase()}`, (timeoutMs) => this.dns.address(name, type, { timeoutMs }));
  }
}
