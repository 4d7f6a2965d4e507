import { ForgedPrincipalError, type Principal, PRINCIPAL_MAX_AGE_MS, signPrincipal, verifyPrincipal } from './principal';

const p: Principal = { accountId: 'a1', accountSlug: 'acme', plan: 'pro', keyId: 'k1', role: 'member', scopes: ['assets:read'] };
const key = 'k'.repeat(32);
const bound = { audience: 'publisher', requestId: 'req-1' };

function signedAt(offsetMs: number): string {
  const now = Date.now;
  Date.now = () => now() + offsetMs;
  try {
    return signPrincipal(p, bound, key);
  } finally {
    Date.now = now;
  }
}

describe('signed principal header', () => {
  it('round-trips a principal and an anonymous caller', () => {
    expect(verifyPrincipal(signPrincipal(p, bound, key), bound, key)).toEqual(p);
    expect(verifyPrincipal(signPrincipal(null, bound, key), bound, key)).toBeNull();
  });

  it('refuses a missing, malformed, wrongly signed or tampered header', () => {
    expect(() => verifyPrincipal(undefined, bound, key)).toThrow(ForgedPrincipalError);
    expect(() => verifyPrincipal('nodot', bound, key)).toThrow(ForgedPrincipalError);
    expect(() => verifyPrincipal(signPrincipal(p, bound, 'x'.repeat(32)), bound, key)).toThrow(ForgedPrincipalError);
    const [, mac] = signPrincipal(p, bound, key).split('.');
    const escalated = Buffer.from(
      JSON.stringify({ p: { ...p, role: 'owner' }, iat: Date.now(), aud: bound.audience, rid: bound.requestId }),
    ).toString('base64url');
    expect(() => verifyPrincipal(`${escalated}.${mac}`, bound, key)).toThrow(ForgedPrincipalError);
  });

  it('accepts a header only within about 30 s of signing', () => {
    expect(verifyPrincipal(signedAt(-(PRINCIPAL_MAX_AGE_MS - 2000)), bound, key)).toEqual(p);
    expect(() => verifyPrincipal(signedAt(-(PRINCIPAL_MAX_AGE_MS + 1000)), bound, key)).toThrow(/expired/);
    expect(() => verifyPrincipal(signedAt(-60_000), bound, key)).toThrow(/expired/);
  });

  it('tolerates a small clock skew but refuses a header from the future', () => {
    expect(verifyPrincipal(signedAt(2000), bound, key)).toEqual(p);
    expect(() => verifyPrincipal(signedAt(60_000), bound, key)).toThrow(/future/);
  });

  it('is bound to the target subgraph and the request id', () => {
    const header = signPrincipal(p, bound, key);
    expect(() => verifyPrincipal(header, { ...bound, audience: 'billing' }, key)).toThrow(/another subgraph/);
    expect(() => verifyPrincipal(header, { ...bound, requestId: 'req-2' }, key)).toThrow(/another request/);
  });
});
