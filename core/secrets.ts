import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { config } from './config';

/** AES-256-GCM at rest: `v1.<iv>.<tag>.<ciphertext>` in base64url. Never selected by any GraphQL type. */
const VERSION = 'v1';

function keyBytes(raw = config().SECRET_ENCRYPTION_KEY): Buffer {
  const buf = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (buf.length !== 32) throw new Error('SECRET_ENCRYPTION_KEY must be 32 bytes (64 hex chars or base64)');
  return buf;
}

export function encryptSecret(plaintext: string, key?: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyBytes(key), iv);
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  const tag = cipher.getAuthTag();
  return [VERSION, iv.toString('base64url'), tag.toString('base64url'), ct.toString('base64url')].join('.');
}

export function decryptSecret(sealed: string, key?: string): string {
  const [version, iv, tag, ct] = sealed.split('.');
  if (version !== VERSION || !iv || !tag || ct === undefined) throw new Error('unrecognised sealed secret');
  const decipher = createDecipheriv('aes-256-gcm', keyBytes(key), Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
}
