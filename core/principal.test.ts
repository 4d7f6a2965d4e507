import { ForgedPrincipalError, type Principal, signPrincipal, verifyPrincipal } from './principal';

const p: Principal = { accountId: 'a1', accountSlug: 'acme', plan: 'pro', keyId: 'k1', role: 'member', scopes: ['assets:read'] };

describe('signed principal header', () => {
  it('round-trips a principal and an anonymous caller', () => {
    expect(verifyPrincipal(signPrincipal(p, 'k'.repeat(32)), 'k'.repeat(32))).toEqual(p);
    expect(verifyPrincipal(signPrincipal(null, 'k'.repeat(32)), 'k'.repeat(32))).toBeNull();
  });

  it('refuses a missing, malformed, wrongly signed or tampered header', () => {
    const key = 'k'.repeat(32);
    expect(() => verifyPrincipal(undefined, key)).toThrow(ForgedPrincipalError);
    expect(() => verifyPrincipal('nodot', key)).toThrow(ForgedPrincipalError);
    expect(() => verifyPrincipal(signPrincipal(p, 'x'.repeat(32)), key)).toThrow(ForgedPrincipalError);
    const [, mac] = signPrincipal(p, key).split('.');
    const escalated = Buffer.from(JSON.stringify({ p: { ...p, role: 'owner' }, iat: Date.now() })).toString('base64url');
    expect(() => verifyPrincipal(`${escalated}.${mac}`, key)).toThrow(ForgedPrincipalError);
  });

  it('refuses a header signed too long ago (replay)', () => {
    const key = 'k'.repeat(32);
    const now = Date.now;
    Date.now = () => now() - 10 * 60 * 1000;
    const old = signPrincipal(p, key);
    Date.now = now;
    expect(() => verifyPrincipal(old, key)).toThrow(/expired/);
  });
});
