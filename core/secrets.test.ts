import { decryptSecret, encryptSecret } from './secrets';

const KEY = 'ab'.repeat(32);

describe('secret encryption (AES-256-GCM)', () => {
  it('round-trips and never stores the plaintext', () => {
    const sealed = encryptSecret('sk_live_very_secret', KEY);
    expect(sealed).toMatch(/^v1\./);
    expect(sealed).not.toContain('sk_live_very_secret');
    expect(decryptSecret(sealed, KEY)).toBe('sk_live_very_secret');
  });

  it('uses a fresh IV each time', () => {
    expect(encryptSecret('same', KEY)).not.toBe(encryptSecret('same', KEY));
  });

  it('refuses a tampered ciphertext or the wrong key', () => {
    const sealed = encryptSecret('secret', KEY);
    const parts = sealed.split('.');
    const flipped = Buffer.from(parts[3], 'base64url');
    flipped[0] ^= 1;
    expect(() => decryptSecret([...parts.slice(0, 3), flipped.toString('base64url')].join('.'), KEY)).toThrow();
    expect(() => decryptSecret(sealed, 'cd'.repeat(32))).toThrow();
  });
});
