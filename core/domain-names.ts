import { getDomain } from 'tldts';
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { badRequest, isPlatformError } from './errors';

/** Longest domain name in its ASCII form (RFC 1035), in characters. */
export const MAX_DOMAIN_LENGTH = 253;
/** Longest label, in characters. */
export const MAX_LABEL_LENGTH = 63;
/** Longest input looked at before normalising (Unicode names shrink or grow under punycode). */
export const MAX_DOMAIN_INPUT_LENGTH = 1024;

/** Letters, digits and hyphens, not starting or ending with a hyphen. */
const LDH_LABEL = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;
/**
 * Characters that mark something other than a bare domain name: a scheme or port (`:`), a path
 * (`/`, `\`), credentials (`@`), a query or fragment (`?`, `#`), an IPv6 literal (`[`, `]`),
 * percent-encoding, whitespace and control characters.
 */
const NOT_A_NAME = /[:/\\@?#[\]%\s\p{Cc}]/u;

const invalid = (input: string, reason: string) =>
  badRequest('invalid_domain', `"${input.slice(0, 100)}" is not a domain name: ${reason}`, { reason });

/**
 * A custom domain as stored: lowercase ASCII (Unicode labels become punycode `xn--` labels).
 * Accepts a bare name only — no scheme, path, port, credentials, IP address or trailing dot — of
 * at least two LDH labels of 1–63 characters, at most 253 in all, whose last label is not numeric.
 * Throws 400 `invalid_domain` otherwise.
 */
export function normalizeDomain(input: string): string {
  if (typeof input !== 'string' || input.length === 0) throw invalid(String(input ?? ''), 'empty');
  if (input.length > MAX_DOMAIN_INPUT_LENGTH) throw invalid(input, 'too long');
  if (NOT_A_NAME.test(input)) throw invalid(input, 'only a host name is accepted (no scheme, path, port, credentials or spaces)');
  if (isIP(input)) throw invalid(input, 'IP addresses are not accepted');
  const ascii = domainToASCII(input);
  if (!ascii) throw invalid(input, 'not a valid internationalised domain name');
  if (isIP(ascii)) throw invalid(input, 'IP addresses are not accepted');
  if (ascii.length > MAX_DOMAIN_LENGTH) throw invalid(input, `longer than ${MAX_DOMAIN_LENGTH} characters`);
  const labels = ascii.split('.');
  if (labels.length < 2) throw invalid(input, 'a domain needs at least two labels');
  for (const label of labels) {
    if (label.length === 0) throw invalid(input, 'empty label');
    if (label.length > MAX_LABEL_LENGTH) throw invalid(input, `a label is longer than ${MAX_LABEL_LENGTH} characters`);
    if (!LDH_LABEL.test(label)) throw invalid(input, 'labels hold letters, digits and inner hyphens only');
  }
  if (/^[0-9]+$/.test(labels[labels.length - 1])) throw invalid(input, 'the top-level label is numeric');
  return ascii;
}

/** True when `domain` is `parent` or lies under it (both normalised). */
export function isWithin(domain: string, parent: string): boolean {
  return domain === parent || domain.endsWith(`.${parent}`);
}

/**
 * The organizational domain of `host` (DMARC, RFC 7489 §3.2): the registrable domain under the
 * Public Suffix List, private suffixes included (`a.github.io` and `b.github.io` are different
 * organizations). `null` for a public suffix itself or an IP address.
 */
export function organizationalDomain(host: string): string | null {
  return getDomain(host, { allowPrivateDomains: true }) ?? null;
}

/**
 * DMARC relaxed alignment: two hosts are aligned when they share an organizational domain
 * (`news@example.com` sent through `mg.example.com`).
 */
export function relaxedAligned(a: string, b: string): boolean {
  const orgA = organizationalDomain(a);
  return orgA !== null && orgA === organizationalDomain(b);
}

/** Longest e-mail address (RFC 5321 path limit), in characters. */
export const MAX_EMAIL_LENGTH = 254;
const LOCAL_PART = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;

/**
 * An address as stored and compared: dot-atom local part (at most 64 characters) and a domain
 * normalised like custom domains (punycode), all lowercase. Throws 400 `invalid_email`.
 */
export function normalizeEmail(input: string, field = 'email'): string {
  const invalid = () => badRequest('invalid_email', `${field} is not a valid e-mail address`, { field });
  if (typeof input !== 'string' || input.length > MAX_EMAIL_LENGTH * 2) throw invalid();
  const at = input.lastIndexOf('@');
  if (at <= 0) throw invalid();
  const local = input.slice(0, at);
  if (local.length > 64 || !LOCAL_PART.test(local)) throw invalid();
  let domain: string;
  try {
    domain = normalizeDomain(input.slice(at + 1));
  } catch (e) {
    if (isPlatformError(e)) throw invalid();
    throw e;
  }
  const email = `${local.toLowerCase()}@${domain}`;
  if (email.length > MAX_EMAIL_LENGTH) throw invalid();
  return email;
}
