import { Resolver } from 'node:dns/promises';

/**
 * A DNS resolver seen as an interface, so that the mail audit (and domain TXT verification) can be
 * pointed at the system's resolvers, at `MAIL_DNS_SERVERS`, or at the loopback stand-in in tests.
 * Every answer distinguishes "the name has no such record" (a definite, cacheable answer) from "the
 * lookup failed" (SERVFAIL, timeout, refused): callers must never treat a failure as an absence.
 */
export type DnsRecordType = 'TXT' | 'MX' | 'A' | 'AAAA';

export interface MxRecord {
  exchange: string;
  priority: number;
}

/** `ok`: records found; `nxdomain`/`nodata`: a definite empty answer (a "void lookup" in RFC 7208 §4.6.4). */
export type DnsAnswer<T> =
  | { outcome: 'ok'; records: T[] }
  | { outcome: 'nxdomain' | 'nodata'; records: [] }
  | { outcome: 'error'; records: []; error: DnsFailure };

/** Why a lookup failed; none of these says anything about whether the record exists. */
export type DnsFailure = 'servfail' | 'timeout' | 'refused' | 'error';

export interface DnsResolver {
  /** TXT strings of each record joined (RFC 7208 §3.3: the strings of one record concatenate). */
  txt(name: string, opts?: LookupOptions): Promise<DnsAnswer<string>>;
  mx(name: string, opts?: LookupOptions): Promise<DnsAnswer<MxRecord>>;
  /** Addresses (`A` or `AAAA`). */
  address(name: string, type: 'A' | 'AAAA', opts?: LookupOptions): Promise<DnsAnswer<string>>;
}

export interface LookupOptions {
  /** This lookup's time limit in ms (default 2,000). */
  timeoutMs?: number;
}

/** Per-lookup time limit when the caller gives none (spec 8: two seconds per lookup). */
export const DEFAULT_LOOKUP_TIMEOUT_MS = 2_000;

/** Parses `host:port,host:port` (IPv6 as `[::1]:53`); an empty or unset value means the system's resolvers. */
export function parseDnsServers(value: string | undefined): string[] {
  if (!value) return [];
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

const FAILURES: Record<string, DnsFailure> = {
  ESERVFAIL: 'servfail',
  ETIMEOUT: 'timeout',
  ECONNREFUSED: 'refused',
  EREFUSED: 'refused',
  ECANCELLED: 'timeout',
};

function classify<T>(err: unknown): DnsAnswer<T> {
  const code = (err as { code?: string }).code ?? '';
  if (code === 'ENOTFOUND') return { outcome: 'nxdomain', records: [] };
  if (code === 'ENODATA') return { outcome: 'nodata', records: [] };
  return { outcome: 'error', records: [], error: FAILURES[code] ?? 'error' };
}

/**
 * The real adapter: Node's c-ares resolver (`node:dns/promises`), one try per server, with the
 * listed servers or the system's. A lookup that outlives its limit is reported as `timeout` even
 * when c-ares is still waiting (its own timer counts per try and per server).
 */
export class SystemDnsResolver implements DnsResolver {
  private readonly servers: string[];

  constructor(servers: string[] = []) {
    this.servers = servers;
  }

  private async run<T>(timeoutMs: number, query: (r: Resolver) => Promise<T[]>): Promise<DnsAnswer<T>> {
    // A resolver per lookup: cancel() aborts everything on a resolver, so sharing one would let a
    // timed-out lookup cancel its neighbours.
    const r = new Resolver({ timeout: timeoutMs, tries: 1 });
    if (this.servers.length) r.setServers(this.servers);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<DnsAnswer<T>>((resolve) => {
      timer = setTimeout(() => {
        r.cancel();
        resolve({ outcome: 'error', records: [], error: 'timeout' });
      }, timeoutMs);
    });
    const lookup = query(r).then(
      (records): DnsAnswer<T> => (records.length ? { outcome: 'ok', records } : { outcome: 'nodata', records: [] }),
      (err) => classify<T>(err),
    );
    try {
      return await Promise.race([lookup, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  txt(name: string, opts: LookupOptions = {}): Promise<DnsAnswer<string>> {
    return this.run(opts.timeoutMs ?? DEFAULT_LOOKUP_TIMEOUT_MS, async (r) =>
      (await r.resolveTxt(name)).map((chunks) => chunks.join('')),
    );
  }

  mx(name: string, opts: LookupOptions = {}): Promise<DnsAnswer<MxRecord>> {
    return this.run(opts.timeoutMs ?? DEFAULT_LOOKUP_TIMEOUT_MS, (r) => r.resolveMx(name));
  }

  address(name: string, type: 'A' | 'AAAA', opts: LookupOptions = {}): Promise<DnsAnswer<string>> {
    return this.run(opts.timeoutMs ?? DEFAULT_LOOKUP_TIMEOUT_MS, (r) => (type === 'A' ? r.resolve4(name) : r.resolve6(name)));
  }
}
