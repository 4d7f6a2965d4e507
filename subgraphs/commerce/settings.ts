import { invalidConfiguration } from './errors';

/**
 * The documented storefront settings (spec 2.2 leaves the keys open; chosen in
 * docs/spec-decisions.md). Connect `settings` and `PUT /storefront/settings` take these keys only;
 * a credential-shaped key is always refused, whatever its value, and its value is never echoed.
 */
export const SETTING_RULES: Record<string, (v: unknown) => boolean> = {
  /** BCP 47 tag such as `en` or `en-US`. */
  default_locale: (v) => typeof v === 'string' && /^[a-z]{2,3}(?:-[A-Z]{2}|-[A-Za-z]{4})?$/.test(v),
  /** ISO 4217 code. */
  currency: (v) => typeof v === 'string' && /^[A-Z]{3}$/.test(v),
  /** Storefront page cache lifetime, seconds (0–86,400). */
  cache_ttl_seconds: (v) => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 86_400,
  maintenance_mode: (v) => typeof v === 'boolean',
  robots_indexing: (v) => typeof v === 'boolean',
};
export const SETTING_KEYS = Object.keys(SETTING_RULES);

const CREDENTIAL_SHAPED = /(token|secret|passw(or)?d|pwd|api[_-]?key|private[_-]?key|credential|auth|cookie|session)/i;

export function isCredentialShaped(key: string): boolean {
  return CREDENTIAL_SHAPED.test(key);
}

/** Returns the settings when every key is documented and well-formed; else 422 naming the keys. */
export function checkSettings(settings: unknown): Record<string, unknown> {
  if (settings === undefined || settings === null) return {};
  if (typeof settings !== 'object' || Array.isArray(settings)) throw invalidConfiguration('settings must be a JSON object');
  const entries = Object.entries(settings as Record<string, unknown>);
  const credentialKeys = entries.map(([k]) => k).filter(isCredentialShaped);
  if (credentialKeys.length > 0) {
    throw invalidConfiguration('settings never hold credentials; send them to an environment', {
      rejected_keys: credentialKeys,
    });
  }
  const unknown = entries.map(([k]) => k).filter((k) => !(k in SETTING_RULES));
  if (unknown.length > 0) {
    throw invalidConfiguration(`unknown settings: ${unknown.join(', ')}`, { rejected_keys: unknown, allowed_keys: SETTING_KEYS });
  }
  const bad = entries.filter(([k, v]) => !SETTING_RULES[k](v)).map(([k]) => k);
  if (bad.length > 0) throw invalidConfiguration(`malformed settings: ${bad.join(', ')}`, { rejected_keys: bad });
  return Object.fromEntries(entries);
}
