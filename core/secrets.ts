import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { config } from './config';

/**
 * Secrets at rest: AES-256-GCM, sealed as `v1.<kid>.<iv>.<tag>.<ciphertext>` (base64url parts).
 *
 * - `kid` names the key that sealed the value (a short digest of it), so the key can be rotated:
 *   set the new `SECRET_ENCRYPTION_KEY` and list the previous one in `SECRET_ENCRYPTION_OLD_KEYS`;
 *   values sealed under either are read, new values are sealed under the new key.
 * - `aad` binds the ciphertext to the record it belongs to (e.g. `publisher_newsletter_providers:
 *   <site id>:apiKey`): a sealed value copied into another record does not open there.
 * - Values sealed before key ids existed (`v1.<iv>.<tag>.<ciphertext>`, no AAD) are still read.
 *
 * Never selected by any GraphQL type.
 */
const VERSION = 'v1';

export interface SecretKeyring {
  /** Seals new values. */
  current: string;
  /** Still open values sealed under them. */
  old?: string[];
}

function keyBytes(raw: string): Buffer {
  const buf = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (buf.length !== 32) throw new Error('SECRET_ENCRYPTION_KEY must be 32 bytes (64 hex chars or base64)');
  return buf;
}

/** A key's id: the first 8 base64url characters of its SHA-256 (48 bits; names it, reveals nothing useful). */
export function keyId(raw: string): string {
  return createHash('sha256').update(keyBytes(raw)).digest('base64url').slice(0, 8);
}

function processKeyring(): SecretKeyring {
  const c = config();
  const old = (c.SECRET_ENCRYPTION_OLD_KEYS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return { current: c.SECRET_ENCRYPTION_KEY, old };
}

const asRing = (k?: SecretKeyring | string): SecretKeyring => (typeof k === 'string' ? { current: k } : (k ?? processKeyring()));

/** Seals `plaintext` for the record named by `aad`. */
export function encryptSecret(plaintext: string, aad: string, keys?: SecretKeyring | string): string {
  const ring = asRing(keys);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyBytes(ring.current), iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [
    VERSION,
    keyId(ring.current),
    iv.toString('base64url'),
    cipher.getAuthTag().toString('base64url'),
    ct.toString('base64url'),
  ].join('.');
}

/** Opens a sealed value of the record named by `aad`; throws when it was sealed for another record or key. */
export function decryptSecret(sealed: string, aad: string, keys?: SecretKeyring | string): string {
  const ring = asRing(keys);
  const parts = sealed.split('.');
  if (parts[0] !== VERSION) throw new Error('unrecognised sealed secret');
  if (parts.length === 4) {
    // Sealed before key ids and AAD: try each key of the ring.
    const [, iv, tag, ct] = parts;
    for (const k of [ring.current, ...(ring.old ?? [])]) {
      try {
        return open(k, iv, tag, ct, null);
      } catch {
        /* next key */
      }
    }
    throw new Error('sealed secret does not open with any configured key');
  }
  if (parts.length !== 5) throw new Error('unrecognised sealed secret');
  const [, kid, iv, tag, ct] = parts;
  const key = [ring.current, ...(ring.old ?? [])].find((k) => keyId(k) === kid);
  if (!key) throw new Error(`sealed secret names key ${kid}, which is not configured`);
  return open(key, iv, tag, ct, aad);
}

function open(key: string, iv: string, tag: string, ct: string, aad: string | null): string {
  const decipher = createDecipheriv('aes-256-gcm', keyBytes(key), Buffer.from(iv, 'base64url'));
  if (aad !== null) decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
}
