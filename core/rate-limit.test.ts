import type { Principal } from './principal';
import { bearerToken, EdgeLimits } from './rate-limit';

const principal = { keyId: 'k1', accountId: 'a', scopes: [], role: 'owner' } as unknown as Principal;

describe('edge limits', () => {
  it('parses the bearer scheme in any case and spacing', () => {
    for (const h of ['Bearer K', 'bearer K', 'Bearer   K', 'BEARER K ', ' Bearer\tK']) expect(bearerToken(h)).toBe('K');
    for (const h of ['Basic K', 'BearerK', 'Bearer K L', '', undefined]) expect(bearerToken(h)).toBeUndefined();
  });

  it('counts a key against its key id, whatever the spelling of the header', async () => {
    const limits = new EdgeLimits(async (t) => (t === 'good' ? principal : null), { perMinute: 3 });
    for (const h of ['Bearer good', 'bearer  good', 'BEARER good']) expect((await limits.admit(h, '10.0.0.1')).ok).toBe(true);
    // Another address, the same key: the same bucket.
    expect(await limits.admit('Bearer good', '10.0.0.2')).toMatchObject({ ok: false, reason: 'rate_limited' });
  });

  it('limits failed authentications per address, refusing before the key lookup once spent', async () => {
    let lookups = 0;
    const limits = new EdgeLimits(
      async () => {
        lookups++;
        return null;
      },
      { perMinute: 1000, authFailuresPerMinute: 5 },
    );
    const answers = [];
    for (let i = 0; i < 50; i++) answers.push(await limits.admit(`Bearer random-${i}`, '10.0.0.9'));
    expect(lookups).toBe(5);
    expect(answers.filter((a) => a.ok)).toHaveLength(5);
    expect(answers[49]).toMatchObject({ ok: false, reason: 'auth_failures' });
    // Another address is not affected; requests without a key are counted per address, not as failures.
    expect((await limits.admit('Bearer other', '10.0.0.10')).ok).toBe(true);
    expect((await limits.admit(undefined, '10.0.0.9')).ok).toBe(true);
  });
});
