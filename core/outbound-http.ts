import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { badRequest } from './errors';

/**
 * Outbound HTTP for push deliveries and webhooks (docs/contracts.md "Outbound HTTP"), one rule set for
 * every area: only public HTTPS; private,
 * loopback, link-local, reserved and IPv4-mapped IPv6 addresses, plain HTTP and credentials in the
 * URL are refused; redirects are never followed (a 3xx is a failed attempt), so no redirect can lead
 * anywhere unsafe. The address checked is the address connected to: each send resolves the host,
 * checks every answer and pins the connection to the first one. Hosts on `OUTBOUND_ALLOW_HOSTS`
 * (tests: `127.0.0.1`) may be private and plain HTTP on any port.
 */

const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['::', 96], // IPv4-compatible (deprecated)
  ['64:ff9b::', 96], // NAT64
  ['64:ff9b:1::', 48],
  ['100::', 64], // discard
  ['2001::', 23], // IETF protocol assignments (Teredo, ORCHID, benchmarking…)
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  blocked.addSubnet(net, prefix, 'ipv6');
}

// IPv4-mapped IPv6 (::ffff:0:0/96) is refused whatever the IPv4 address. Kept apart because a
// BlockList also matches plain IPv4 addresses against a mapped subnet.
const mapped = new BlockList();
mapped.addSubnet('::ffff:0:0', 96, 'ipv6');

/** Whether an IP address is one a push may never reach. */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family === 6) return mapped.check(address, 'ipv6') || blocked.check(address, 'ipv6');
  return true;
}

export function parseAllowHosts(raw: string | undefined): Set<string> {
  return new Set(
    (raw ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
  );
}

const hostOf = (u: URL) => u.hostname.toLowerCase().replace(/^\[|\]$/g, '');

/** The error codes an area answers a refused destination with (400 either way). */
export interface UrlRefusals {
  /** Not a usable absolute URL. */
  invalid: string;
  /** A URL the outbound rules refuse. */
  unsafe: string;
}

/** Object-store push: `invalid_push_url` / `unsafe_push_url` (the default). */
export const PUSH_URL_REFUSALS: UrlRefusals = { invalid: 'invalid_push_url', unsafe: 'unsafe_push_url' };

const unsafeUrl = (codes: UrlRefusals, reason: string) => badRequest(codes.unsafe, `url refused: ${reason}`, { reason });

/** The shape rules that need no DNS: scheme, credentials, literal addresses. Returns the parsed URL. */
export function checkUrlShape(raw: string, allowHosts: Set<string>, codes: UrlRefusals = PUSH_URL_REFUSALS): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw badRequest(codes.invalid, 'url must be an absolute https URL');
  }
  if (raw.length > 2048) throw badRequest(codes.invalid, 'url is longer than 2048 characters');
  const allowed = allowHosts.has(hostOf(u));
  if (u.protocol !== 'https:' && !(allowed && u.protocol === 'http:')) throw unsafeUrl(codes, 'only https is allowed');
  if (u.username || u.password) throw unsafeUrl(codes, 'credentials in the url are not allowed');
  if (u.hash) throw badRequest(codes.invalid, 'url must not carry a fragment');
  const host = hostOf(u);
  if (!allowed && isIP(host) && isForbiddenAddress(host)) throw unsafeUrl(codes, 'private or reserved address');
  if (!allowed && (host === 'localhost' || host.endsWith('.localhost'))) throw unsafeUrl(codes, 'loopback host');
  return u;
}

export type Resolver = (host: string) => Promise<{ address: string; family: number }[]>;
const systemResolver: Resolver = (host) => dnsLookup(host, { all: true, verbatim: true });

/** A destination checked now: the address to connect to (pinned), or the host itself when allowed. */
export interface CheckedTarget {
  url: URL;
  address: string;
  family: 4 | 6;
}

/**
 * Resolves and checks a destination. With `lenient`, a host that does not resolve passes (creation:
 * docs/contracts.md accepts it then and checks at each send); any answer that is forbidden refuses.
 */
export async function resolveTarget(
  raw: string,
  allowHosts: Set<string>,
  opts: { lenient?: boolean; resolver?: Resolver; refusals?: UrlRefusals } = {},
): Promise<CheckedTarget | null> {
  const codes = opts.refusals ?? PUSH_URL_REFUSALS;
  const url = checkUrlShape(raw, allowHosts, codes);
  const host = hostOf(url);
  const allowed = allowHosts.has(host);
  const literal = isIP(host);
  if (literal) return { url, address: host, family: literal as 4 | 6 };
  let answers: { address: string; family: number }[];
  try {
    answers = await (opts.resolver ?? systemResolver)(host);
  } catch {
    if (opts.lenient) return null;
    throw unsafeUrl(codes, 'host does not resolve');
  }
  if (answers.length === 0) {
    if (opts.lenient) return null;
    throw unsafeUrl(codes, 'host does not resolve');
  }
  if (!allowed && answers.some((a) => isForbiddenAddress(a.address)))
    throw unsafeUrl(codes, 'host resolves to a private or reserved address');
  return { url, address: answers[0].address, family: answers[0].family === 6 ? 6 : 4 };
}

export interface PostResult {
  statusCode: number;
  /** The first bytes of the answer (at most `maxExcerptBytes`), as UTF-8. */
  excerpt: string;
}

const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: 64 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 64 }),
};

/**
 * The one outbound request of the platform: to a checked target, connecting only to its pinned
 * address (a DNS answer that changes after the check cannot move it); never follows a redirect.
 */
export function requestPinned(
  target: CheckedTarget,
  opts: Pick<http.RequestOptions, 'method' | 'headers' | 'agent' | 'timeout' | 'socketPath'>,
  onResponse: (res: http.IncomingMessage) => void,
): http.ClientRequest {
  const { url, address, family } = target;
  const pinned: LookupFunction = (_host, options, cb) => {
    if ((options as { all?: boolean }).all)
      (cb as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address, family }]);
    else cb(null, address, family);
  };
  const isHttps = url.protocol === 'https:';
  return (isHttps ? https : http).request(
    {
      protocol: url.protocol,
      hostname: hostOf(url),
      port: url.port || (isHttps ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      lookup: pinned,
      ...opts,
    },
    onResponse,
  );
}

/**
 * POSTs `body` to a checked target, connecting only to its pinned address. Rejects on timeout
 * (`timeoutMs` for the whole exchange) and network errors; never follows a redirect.
 */
export function postPinned(
  target: CheckedTarget,
  body: string,
  headers: Record<string, string>,
  opts: { timeoutMs: number; maxExcerptBytes: number },
): Promise<PostResult> {
  const isHttps = target.url.protocol === 'https:';
  return new Promise((resolve, reject) => {
    const req = requestPinned(
      target,
      {
        method: 'POST',
        agent: isHttps ? agents.https : agents.http,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        res.on('data', (c: Buffer) => {
          if (kept < opts.maxExcerptBytes) {
            const part = c.subarray(0, opts.maxExcerptBytes - kept);
            chunks.push(part);
            kept += part.length;
          }
        });
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ statusCode: res.statusCode ?? 0, excerpt: utf8Prefix(Buffer.concat(chunks)) });
        });
        res.on('error', (e) => {
          clearTimeout(timer);
          reject(e);
        });
      },
    );
    const timer = setTimeout(() => req.destroy(new OutboundTimeout(opts.timeoutMs)), opts.timeoutMs);
    req.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    req.end(body);
  });
}

export class OutboundTimeout extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = 'OutboundTimeout';
  }
}

/** Drops a multi-byte character cut at the end of an excerpt. */
function utf8Prefix(buf: Buffer): string {
  const s = buf.toString('utf8');
  return s.endsWith('\uFFFD') ? s.slice(0, -1) : s;
}

export interface LocalReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The answer as UTF-8, at most `maxBodyBytes` of it. */
  body: string;
}

/**
 * A request to a workload of this machine on loopback (a site's process, the data plane's edge):
 * the health probes and a site's setup calls. Through `requestPinned`, like every request the
 * platform makes, pinned to 127.0.0.1 and with the `Host` the caller names; the address checks of
 * `resolveTarget` are for customers' URLs and do not apply to the platform's own ports. Rejects
 * with `OutboundTimeout` when the socket stays idle `timeoutMs`, and on network errors.
 */
export function requestLocal(
  /** A loopback port, or a workload's endpoint (its unix socket when it runs sandboxed). */
  to: number | { port: number; socketPath?: string },
  opts: {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
    timeoutMs: number;
    maxBodyBytes?: number;
  },
): Promise<LocalReply> {
  const max = opts.maxBodyBytes ?? 8 * 1024 * 1024;
  const port = typeof to === 'number' ? to : to.port;
  const socketPath = typeof to === 'number' ? undefined : to.socketPath;
  const target: CheckedTarget = { url: new URL(`http://127.0.0.1:${port}${opts.path ?? '/'}`), address: '127.0.0.1', family: 4 };
  return new Promise((resolve, reject) => {
    const req = requestPinned(
      target,
      {
        method: opts.method ?? 'GET',
        agent: false,
        timeout: opts.timeoutMs,
        ...(socketPath ? { socketPath } : {}),
        headers: {
          ...(opts.body !== undefined ? { 'content-length': String(Buffer.byteLength(opts.body)) } : {}),
          ...opts.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        res.on('data', (c: Buffer) => {
          if (kept >= max) return;
          const part = c.subarray(0, max - kept);
          chunks.push(part);
          kept += part.length;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: utf8Prefix(Buffer.concat(chunks)) }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new OutboundTimeout(opts.timeoutMs)));
    req.on('error', reject);
    req.end(opts.body);
  });
}
