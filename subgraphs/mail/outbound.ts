import { lookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { badRequest } from '../../core/errors';

/**
 * Outbound webhook requests as CONTRACTS.md requires: HTTPS only; no credentials in the URL;
 * private, loopback, link-local, reserved and IPv4-mapped private addresses refused, checked again
 * at each send after resolving the name, and the connection pinned to the address that was checked
 * (so a DNS answer cannot change between the check and the connect). Redirects are not followed.
 * Hosts listed in `OUTBOUND_ALLOW_HOSTS` (tests: `127.0.0.1`) may be reached over plain HTTP on any port.
 */
export const OUTBOUND_TIMEOUT_MS = 10_000;
/** Response bytes kept per attempt (spec 8's push-delivery figure, reused here). */
export const RESPONSE_EXCERPT_BYTES = 2048;

export function allowHosts(value: string | undefined): Set<string> {
  return new Set(
    (value ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
  );
}

function publicAddress(address: string): boolean {
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed.range() === 'unicast';
}

const hostOf = (u: URL) => u.hostname.replace(/^\[|\]$/g, '').toLowerCase();

/** Checks a webhook URL's form when it is registered (the name is resolved at each send). */
export function checkWebhookUrl(raw: string, allowed: Set<string>): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw badRequest('invalid_webhook_url', 'url is not a valid absolute URL');
  }
  const host = hostOf(u);
  if (u.username || u.password) throw badRequest('invalid_webhook_url', 'url must not carry credentials');
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && allowed.has(host))) {
    throw badRequest('invalid_webhook_url', 'url must use https');
  }
  if (isIP(host) && !allowed.has(host) && !publicAddress(host)) {
    throw badRequest('invalid_webhook_url', 'url points at a private, loopback or reserved address');
  }
  return u.toString();
}

export interface PostResult {
  statusCode: number | null;
  durationMs: number;
  responseExcerpt: string | null;
  error: string | null;
}

/** POSTs `body` with `headers` to `url`, resolving and checking the address first. Never throws. */
export async function safePost(
  url: string,
  body: string,
  headers: Record<string, string>,
  allowed: Set<string>,
): Promise<PostResult> {
  const started = performance.now();
  const done = (r: Omit<PostResult, 'durationMs'>): PostResult => ({ ...r, durationMs: Math.round(performance.now() - started) });
  let u: URL;
  try {
    u = new URL(checkWebhookUrl(url, allowed));
  } catch (e) {
    return done({ statusCode: null, responseExcerpt: null, error: (e as Error).message });
  }
  const host = hostOf(u);
  let address: string;
  let family: number;
  try {
    if (isIP(host)) [address, family] = [host, isIP(host)];
    else ({ address, family } = await lookup(host));
  } catch {
    return done({ statusCode: null, responseExcerpt: null, error: `could not resolve ${host}` });
  }
  if (!allowed.has(host) && !publicAddress(address)) {
    return done({ statusCode: null, responseExcerpt: null, error: `${host} resolves to a private or reserved address` });
  }
  const client = u.protocol === 'https:' ? https : http;
  return new Promise<PostResult>((resolve) => {
    const req = client.request(
      u,
      {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body).toString() },
        timeout: OUTBOUND_TIMEOUT_MS,
        lookup: (_h, _o, cb) => (cb as (e: null, a: string, f: number) => void)(null, address, family),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        res.on('data', (c: Buffer) => {
          if (kept < RESPONSE_EXCERPT_BYTES) {
            chunks.push(c.subarray(0, RESPONSE_EXCERPT_BYTES - kept));
            kept += Math.min(c.length, RESPONSE_EXCERPT_BYTES - kept);
          }
        });
        res.on('end', () =>
          resolve(
            done({ statusCode: res.statusCode ?? null, responseExcerpt: Buffer.concat(chunks).toString('utf8'), error: null }),
          ),
        );
        res.on('error', (e) => resolve(done({ statusCode: res.statusCode ?? null, responseExcerpt: null, error: e.message })));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${OUTBOUND_TIMEOUT_MS} ms`)));
    req.on('error', (e) => resolve(done({ statusCode: null, responseExcerpt: null, error: e.message })));
    req.end(body);
  });
}
