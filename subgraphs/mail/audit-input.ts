import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { badRequest } from '../../core/errors';

/** Spec 8: at most five DKIM selectors per audit. */
export const MAX_SELECTORS = 5;
const MAX_DOMAIN_LENGTH = 253;
const MAX_LABEL_LENGTH = 63;
const MAX_INPUT_LENGTH = 1024;
const LDH_LABEL = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;
/** A scheme or port (`:`), a path, credentials, a query, an IPv6 literal, escapes or whitespace. */
const NOT_A_NAME = /[:/\\@?#[\]%\s\p{Cc}]/u;
/** A DKIM selector: one or more DNS labels (letters, digits, hyphens, underscores). */
const SELECTOR = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/i;

const invalid = (input: string, reason: string) =>
  badRequest('invalid_domain', `"${input.slice(0, 100)}" is not a domain name: ${reason}`, { reason });

/**
 * The audited domain in lowercase ASCII (Unicode labels become `xn--` labels, a final dot is
 * dropped). A URL, IP address, credentials, port or path is `invalid_domain`: the audit only ever
 * asks DNS about a name, it never fetches anything it is given.
 */
export function normalizeAuditDomain(input: unknown): string {
  if (typeof input !== 'string' || input.trim().length === 0) throw invalid(String(input ?? ''), 'empty');
  const raw = input.trim();
  if (raw.length > MAX_INPUT_LENGTH) throw invalid(raw, 'too long');
  if (NOT_A_NAME.test(raw)) throw invalid(raw, 'only a domain name is accepted (no URL, scheme, path, port or credentials)');
  const bare = raw.endsWith('.') ? raw.slice(0, -1) : raw;
  if (isIP(bare)) throw invalid(raw, 'IP addresses are not accepted');
  const ascii = domainToASCII(bare);
  if (!ascii) throw invalid(raw, 'not a valid internationalised domain name');
  if (isIP(ascii)) throw invalid(raw, 'IP addresses are not accepted');
  if (ascii.length > MAX_DOMAIN_LENGTH) throw invalid(raw, `longer than ${MAX_DOMAIN_LENGTH} characters`);
  const labels = ascii.split('.');
  if (labels.length < 2) throw invalid(raw, 'a domain needs at least two labels');
  for (const label of labels) {
    if (label.length === 0) throw invalid(raw, 'empty label');
    if (label.length > MAX_LABEL_LENGTH) throw invalid(raw, `a label is longer than ${MAX_LABEL_LENGTH} characters`);
    if (!LDH_LABEL.test(label)) throw invalid(raw, 'labels hold letters, digits and inner hyphens only');
  }
  if (/^[0-9]+$/.test(labels[labels.length - 1])) throw invalid(raw, 'the top-level label is numeric');
  return ascii;
}

/** Comma-separated selectors → at most five distinct lowercase selectors; else `invalid_selectors`. */
export function parseSelectors(input: unknown): string[] {
  if (input === undefined || input === null || input === '') return [];
  if (typeof input !== 'string') throw badRequest('invalid_selectors', 'selectors must be a comma-separated list');
  const list = [...new Set(input.split(',').map((s) => s.trim().toLowerCase()))];
  if (list.some((s) => s.length === 0)) throw badRequest('invalid_selectors', 'selectors must not be empty');
  const bad = list.find((s) => s.length > 63 || !SELECTOR.test(s));
  if (bad !== undefined)
    throw badRequest('invalid_selectors', `"${bad.slice(0, 70)}" is not a DKIM selector`, { selector: bad.slice(0, 70) });
  if (list.length > MAX_SELECTORS) {
    throw badRequest('invalid_selectors', `at most ${MAX_SELECTORS} selectors may be checked at once`, { max: MAX_SELECTORS });
  }
  return list.sort();
}
