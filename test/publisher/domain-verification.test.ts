import { randomBytes } from 'node:crypto';
import { type DnsStandIn, startDnsStandIn } from '../../core/dns/stand-in-server';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { errorBody, projectPath, runningSite } from './support';

/**
 * Custom-domain ownership (docs/spec-decisions.md, "Publishing sites": `POST /domain`): a TXT token read through a real DNS server on
 * loopback, a claim that lapses when never verified, and a 409 that names nobody.
 */
// Long enough that a busy machine still answers the 409 before the claim lapses.
const CLAIM_TTL_MS = 5000;

let t: TestPlatform;
let dns: DnsStandIn;

beforeAll(async () => {
  dns = await startDnsStandIn({ zones: {} });
  t = await startTestPlatform({
    PUBLISHER_DNS_SERVERS: dns.address,
    PUBLISHER_DOMAIN_CLAIM_TTL_MS: String(CLAIM_TTL_MS),
    PUBLISHER_DOMAIN_CHECK_INTERVAL_MS: '150',
  });
});
afterAll(async () => {
  await t.stop();
  await dns.stop();
});

const zones: Record<string, { TXT?: string[]; behavior?: 'servfail' }> = {};
const publish = (name: string, entry: { TXT?: string[]; behavior?: 'servfail' }) => {
  zones[name] = entry;
  dns.setZones(zones);
};
const setDomain = (key: string, projectId: string, domain: string) =>
  t.rest('POST', projectPath(projectId, '/domain'), { key, body: { domain } });
const domainOf = async (key: string, projectId: string) =>
  (await t.rest('GET', projectPath(projectId, '/metadata'), { key })).body.data.domain;
const unique = () => `shop-${randomBytes(4).toString('hex')}.example`;

async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (ok(v) || Date.now() > until) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('custom-domain ownership', () => {
  it('answers the TXT record to create, and turns active when posting the name again finds it', async () => {
    const { key } = await t.createKey();
    const site = await runningSite(t, key);
    const name = unique();
    const first = await setDomain(key, site, name);
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({
      name,
      status: 'pending_verification',
      verification_record: {
        type: 'TXT',
        name: `_platform-verification.${name}`,
        value: expect.stringMatching(/^platform-verification=[0-9a-f]{32}$/),
      },
      expires_at: expect.any(String),
    });
    // Not published yet: still pending, same token.
    const again = await setDomain(key, site, name);
    expect(again.body.data.status).toBe('pending_verification');
    expect(again.body.data.verification_record).toEqual(first.body.data.verification_record);

    publish(`_platform-verification.${name}`, { TXT: ['v=spf1 -all', first.body.data.verification_record.value] });
    const verified = await setDomain(key, site, name);
    expect(verified.status).toBe(200);
    expect(verified.body.data).toMatchObject({ name, status: 'active', verification_record: null, expires_at: null });
    expect((await domainOf(key, site)).status).toBe('active');
  });

  it('is verified by the background check without another request', async () => {
    const { key } = await t.createKey();
    const site = await runningSite(t, key);
    const name = unique();
    const res = await setDomain(key, site, name);
    publish(`_platform-verification.${name}`, { TXT: [res.body.data.verification_record.value] });
    const d = await eventually(
      () => domainOf(key, site),
      (v) => v.status === 'active',
    );
    expect(d.status).toBe('active');
  });

  it('keeps a claim pending when the lookup fails, and never takes a wrong token as proof', async () => {
    const { key } = await t.createKey();
    const site = await runningSite(t, key);
    const name = unique();
    expect((await setDomain(key, site, name)).status).toBe(200);
    publish(`_platform-verification.${name}`, { behavior: 'servfail' });
    expect((await setDomain(key, site, name)).body.data.status).toBe('pending_verification');
    publish(`_platform-verification.${name}`, { TXT: ['platform-verification=0123456789abcdef0123456789abcdef'] });
    expect((await setDomain(key, site, name)).body.data.status).toBe('pending_verification');
  });

  it('lets another account take a claim that lapsed unverified; the first site loses it and its old token proves nothing', async () => {
    const a = await t.createKey();
    const b = await t.createKey();
    const siteA = await runningSite(t, a.key);
    const siteB = await runningSite(t, b.key);
    const name = unique();
    const claimA = await setDomain(a.key, siteA, name);
    expect(claimA.status).toBe(200);

    // While the claim stands: 409, without saying which site or account holds it.
    const refused = await setDomain(b.key, siteB, name);
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual(errorBody('domain_in_use'));
    expect(JSON.stringify(refused.body)).not.toContain(siteA);
    expect(JSON.stringify(refused.body)).not.toContain(a.accountId);

    await new Promise((r) => setTimeout(r, CLAIM_TTL_MS + 200));
    expect((await domainOf(a.key, siteA)).status).toBe('expired');

    const claimB = await setDomain(b.key, siteB, name);
    expect(claimB.status).toBe(200);
    expect(claimB.body.data.status).toBe('pending_verification');
    expect(claimB.body.data.verification_record.value).not.toBe(claimA.body.data.verification_record.value);
    expect(await domainOf(a.key, siteA)).toBeNull();

    // A's record published late does not win the name back, and does not verify B.
    publish(`_platform-verification.${name}`, { TXT: [claimA.body.data.verification_record.value] });
    expect((await setDomain(b.key, siteB, name)).body.data.status).toBe('pending_verification');
    expect((await setDomain(a.key, siteA, name)).status).toBe(409);
  });

  it('never releases a verified domain, however old', async () => {
    const a = await t.createKey();
    const b = await t.createKey();
    const siteA = await runningSite(t, a.key);
    const siteB = await runningSite(t, b.key);
    const name = unique();
    const claimA = await setDomain(a.key, siteA, name);
    publish(`_platform-verification.${name}`, { TXT: [claimA.body.data.verification_record.value] });
    expect((await setDomain(a.key, siteA, name)).body.data.status).toBe('active');
    await new Promise((r) => setTimeout(r, CLAIM_TTL_MS + 200));
    expect((await domainOf(a.key, siteA)).status).toBe('active');
    expect((await setDomain(b.key, siteB, name)).status).toBe(409);
  });
});
