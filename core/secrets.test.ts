import { createCipheriv, randomBytes } from 'node:crypto';
import { decryptSecret, encryptSecret, keyId } from './secrets';

const KEY = 'ab'.repeat(32);
const NEXT = 'cd'.repeat(32);
const AAD = 'publisher_newsletter_providers:prj_1:apiKey';

/** A value sealed the way the platform did before key ids and AAD: `v1.<iv>.<tag>.<ct>`. */
function legacySeal(plaintext: string, key: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', Buffer.from(key, 'hex'), iv);
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
}

describe('secret encryption (AES-256-GCM)', () => {
  it('seals as v1.<kid>.… and round-trips without storing the plaintext', () => {
    const sealed = encryptSecret('sk_live_very_secret', AAD, KEY);
    const parts = sealed.split('.');
    expect(parts).toHaveLength(5);
    expect(parts[0]).toBe('v1');
    expect(parts[1]).toBe(keyId(KEY));
    expect(sealed).not.toContain('sk_live_very_secret');
    expect(decryptSecret(sealed, AAD, KEY)).toBe('sk_live_very_secret');
  });

  it('uses a fresh IV each time', () => {
    expect(encryptSecret('same', AAD, KEY)).not.toBe(encryptSecret('same', AAD, KEY));
  });

  it('binds the ciphertext to its record: another record (AAD) does not open it', () => {
    const sealed = encryptSecret('secret', AAD, KEY);
    expect(() => decryptSecret(sealed, 'publisher_newsletter_providers:prj_2:apiKey', KEY)).toThrow();
  });

  it('refuses a tampered ciphertext or an unknown key', () => {
    const sealed = encryptSecret('secret', AAD, KEY);
    const parts = sealed.split('.');
    const flipped = Buffer.from(parts[4], 'base64url');
    flipped[0] ^= 1;
    expect(() => decryptSecret([...parts.slice(0, 4), flipped.toString('base64url')].join('.'), AAD, KEY)).toThrow();
    expect(() => decryptSecret(sealed, AAD, NEXT)).toThrow(/not configured/);
  });

  it('rotation: values sealed under an old key still open; new values use the current key', () => {
    const before = encryptSecret('rotated', AAD, KEY);
    const ring = { current: NEXT, old: [KEY] };
    expect(decryptSecret(before, AAD, ring)).toBe('rotated');
    const after = encryptSecret('rotated', AAD, ring);
    expect(after.split('.')[1]).toBe(keyId(NEXT));
    expect(decryptSecret(after, AAD, ring)).toBe('rotated');
  });

  it('values sealed before key ids existed are still read, under the current or an old key', () => {
    expect(decryptSecret(legacySeal('old-value', KEY), AAD, KEY)).toBe('old-value');
    expect(decryptSecret(legacySeal('old-value', KEY), AAD, { current: NEXT, old: [KEY] })).toBe('old-value');
    expect(() => decryptSecret(legacySeal('old-value', KEY), AAD, NEXT)).toThrow();
  });
});
