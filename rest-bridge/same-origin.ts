import type { IncomingHttpHeaders } from 'node:http';

/**
 * The console's same-origin rule (docs/decisions/0280-console-sessions.md): a session cookie never
 * authorises a request the browser says comes from another origin.
 */
const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:\d+)?$/i;

/** The origins this bridge answers as: BASE_URL's, and on loopback the one of the Host the browser used. */
export function ownOrigins(headers: IncomingHttpHeaders, baseUrl: string): string[] {
  const base = new URL(baseUrl);
  const out = [base.origin];
  const host = headers.host;
  if (host && LOOPBACK.test(host)) out.push(`${base.protocol}//${host.toLowerCase()}`);
  return out;
}

/**
 * Where a request comes from, as the browser says: `same` (Origin is ours, or Sec-Fetch-Site is
 * same-origin), `cross` (another Origin, or Sec-Fetch-Site cross-site or same-site: a tenant's site
 * can be same-site with the console), `unknown` (neither header: not a browser's fetch, or a navigation).
 */
export function requestSite(headers: IncomingHttpHeaders, baseUrl: string): 'same' | 'cross' | 'unknown' {
  const fetchSite = headers['sec-fetch-site'];
  if (typeof fetchSite === 'string' && fetchSite !== 'same-origin' && fetchSite !== 'none') return 'cross';
  const origin = headers.origin;
  if (typeof origin === 'string') return ownOrigins(headers, baseUrl).includes(origin.toLowerCase()) ? 'same' : 'cross';
  return fetchSite === 'same-origin' ? 'same' : 'unknown';
}
