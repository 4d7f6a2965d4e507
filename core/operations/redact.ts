/** Longest error message kept on an operation or a dead-lettered message, in characters. */
export const MAX_MESSAGE_LENGTH = 1000;

const MASK = '[redacted]';

/** Names whose value, in `name=value` or `"name": "value"`, is a secret. */
export const SECRET_NAME =
  '[A-Za-z0-9_.-]*(?:api[_-]?key|apikey|access[_-]?key|secret|token|passw(?:or)?d|pwd|credentials?|auth(?:orization)?|signature|sig|session|cookie|private[_-]?key)';

const RULES: Array<[RegExp, string]> = [
  // scheme://user:password@host
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+:[^\s/@]*@/gi, `$1${MASK}@`],
  // Authorization: Bearer xxx / Basic xxx
  [/\b(bearer|basic)\s+[A-Za-z0-9\-._~+/]+=*/gi, `$1 ${MASK}`],
  // name=value, name: value, "name": "value" (query strings, headers, JSON, env lines)
  [new RegExp(`(["']?)\\b(${SECRET_NAME})\\1(\\s*[:=]\\s*)(["']?)[^\\s"'&,;}\\]]+\\4`, 'gi'), `$1$2$1$3$4${MASK}$4`],
  // Well-known token shapes: Stripe-style sk_live_/pk_test_/rk_, GitHub, Slack, AWS access keys, JWTs
  [/\b(?:sk|pk|rk|whsec)_(?:live|test)_[A-Za-z0-9]+/g, MASK],
  [/\b(?:gh[pousr]_[A-Za-z0-9]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})\b/g, MASK],
  [/\beyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/g, MASK],
  // Long opaque strings (keys, digests); UUIDs have hyphens and stay readable.
  [/\b[A-Za-z0-9+/_]{40,}={0,2}/g, MASK],
];

/**
 * Masks anything in a free-text message that looks like a secret: `key=value` pairs with a
 * secret-like name, credentials in URLs, bearer tokens, well-known token shapes and long opaque
 * strings. Used for operation `errorMessage` and dead-letter reasons, which users and logs see.
 */
export function redactMessage(message: unknown): string {
  const s = redactText(typeof message === 'string' ? message : message instanceof Error ? message.message : String(message));
  return s.length > MAX_MESSAGE_LENGTH ? `${s.slice(0, MAX_MESSAGE_LENGTH - 1)}…` : s;
}

/** The same masking rules, without the length cut (log lines keep their full text). */
export function redactText(text: string): string {
  let s = text;
  for (const [re, replacement] of RULES) s = s.replace(re, replacement);
  return s;
}
