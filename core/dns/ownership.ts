import type { DnsAnswer } from './resolver';

/**
 * The one way a customer proves a domain to the platform, whichever area asks (publishing sites,
 * Assets CDN domains): a TXT record `_platform-verification.<domain>` holding
 * `platform-verification=<token>`, the token issued with the claim. One record shape means one
 * sentence in the docs and one thing to tell a DNS host.
 */
export const OWNERSHIP_TXT_LABEL = '_platform-verification';
export const OWNERSHIP_TXT_PREFIX = 'platform-verification=';

/** The record to publish for `domain` and `token`. */
export function ownershipRecord(domain: string, token: string): { type: 'TXT'; name: string; value: string } {
  return { type: 'TXT', name: `${OWNERSHIP_TXT_LABEL}.${domain}`, value: `${OWNERSHIP_TXT_PREFIX}${token}` };
}

/** True only for a definite answer holding the token; a failed lookup proves nothing either way. */
export function provesOwnership(answer: DnsAnswer<string>, token: string): boolean {
  return answer.outcome === 'ok' && answer.records.some((r) => r.trim() === `${OWNERSHIP_TXT_PREFIX}${token}`);
}
