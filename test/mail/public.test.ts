import { randomBytes } from 'node:crypto';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/** The public mail routes and the checklist, through the real bridge, router and DNS stand-in. */
let t: TestPlatform;
beforeAll(async () => {
  // The tests play a proxy in front of the bridge, so each test can be its own client address.
  t = await startTestPlatform({ TRUST_PROXY: '127.0.0.1' });
});
afterAll(() => t?.stop());

// Each test is its own client address, so the per-IP rate limit never couples tests.
const client = () => ({ 'x-forwarded-for': `10.${randomBytes(3).join('.')}` });
const get = (path: string, headers = client()) => t.rest('GET', path, { headers });

describe('GET /api/v1/mail/audit', () => {
  it('audits a domain: records, SPF proposal, disclaimer', async () => {
    const res = await get('/api/v1/mail/audit?domain=simple.test&selectors=s1');
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    const d = res.body.data;
    expect(Object.keys(d).sort()).toEqual(['checkedAt', 'disclaimer', 'domain', 'records', 'spf']);
    expect(d.domain).toBe('simple.test');
    expect(d.spf).toEqual({
      status: 'safe_merge',
      lookupCount: 0,
      reasons: expect.any(Array),
      proposed: 'v=spf1 ip4:1.2.3.4 include:_spf.platform.test -all',
    });
    expect(d.records.map((r: { kind: string; name: string; status: string }) => `${r.kind} ${r.name} ${r.status}`)).toEqual([
      'spf simple.test found',
      'dmarc _dmarc.simple.test missing',
      'mx simple.test found',
      'dkim s1._domainkey.simple.test missing',
      'dkim *._domainkey.simple.test unknown',
      'return_path simple.test pending',
    ]);
    expect(res.headers.get('content-disposition')).toBeNull();
  });

  it('answers an attachment with download=1', async () => {
    const res = await get('/api/v1/mail/audit?domain=simple.test&download=1');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="mail-domain-audit.json"');
    expect(res.body.data.downloadName).toBeUndefined();
  });

  it('answers GraphQL without a download argument as no download, and refuses any other value', async () => {
    const plain = await t.gql('query { mailAudit(domain: "simple.test") { domain downloadName } }');
    expect(plain.errors).toBeUndefined();
    expect(plain.data.mailAudit).toEqual({ domain: 'simple.test', downloadName: null });
    const off = await t.gql('query { mailAudit(domain: "simple.test", download: "0") { downloadName } }');
    expect(off.data.mailAudit).toEqual({ downloadName: null });
    const on = await t.gql('query { mailAudit(domain: "simple.test", download: "1") { downloadName } }');
    expect(on.data.mailAudit).toEqual({ downloadName: 'mail-domain-audit.json' });
    const bad = await t.gql('query { mailAudit(domain: "simple.test", download: "yes") { downloadName } }');
    expect(bad.errors?.[0]?.extensions).toMatchObject({ code: 'invalid_audit' });
  });

  it('normalises Unicode names and reports a resolver failure as unknown', async () => {
    const uni = await get(`/api/v1/mail/audit?domain=${encodeURIComponent('Bücher.test')}`);
    expect(uni.status).toBe(200);
    expect(uni.body.data.domain).toBe('xn--bcher-kva.test');
    const fail = await get('/api/v1/mail/audit?domain=servfail.test');
    expect(fail.body.data.spf).toMatchObject({ status: 'unknown', proposed: null });
  });

  it.each([
    ['domain=https%3A%2F%2Fsimple.test', 'invalid_domain'],
    ['domain=simple.test%2Fpath', 'invalid_domain'],
    ['domain=1.2.3.4', 'invalid_domain'],
    ['domain=user%40simple.test', 'invalid_domain'],
    ['', 'invalid_domain'],
    ['domain=simple.test&selectors=a,b,c,d,e,f', 'invalid_selectors'],
    ['domain=simple.test&download=yes', 'invalid_audit'],
  ])('?%s → 400 %s', async (qs, code) => {
    const res = await get(`/api/v1/mail/audit?${qs}`);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ success: false, error: { code } });
  });

  it('allows 12 requests a minute per client address', async () => {
    const me = client();
    for (let i = 0; i < 12; i++) expect((await get('/api/v1/mail/audit?domain=simple.test', me)).status).toBe(200);
    const over = await get('/api/v1/mail/audit?domain=simple.test', me);
    expect(over.status).toBe(429);
    expect(over.body.error.code).toBe('rate_limited');
    expect((await get('/api/v1/mail/audit?domain=simple.test')).status).toBe(200);
  });

  it('believes X-Forwarded-For only from a trusted proxy', async () => {
    const direct = await startTestPlatform({}, { shareWith: t });
    try {
      const me = client();
      const ask = () => fetch(`${direct.bridgeUrl}/api/v1/mail/audit?domain=simple.test`, { headers: me });
      for (let i = 0; i < 12; i++) expect((await ask()).status).toBe(200);
      // A fresh forwarded address does not buy a fresh bucket: the socket's address is the client's.
      const spoofed = await fetch(`${direct.bridgeUrl}/api/v1/mail/audit?domain=simple.test`, { headers: client() });
      expect(spoofed.status).toBe(429);
    } finally {
      await direct.platform.stop();
    }
  });
});

describe('migration plan and guides', () => {
  it('lists every guide', async () => {
    const res = await get('/api/v1/mail/migration-guides');
    expect(res.status).toBe(200);
    expect(res.body.data.map((g: { provider: string }) => g.provider)).toEqual([
      'provider_a',
      'provider_b',
      'provider_c',
      'provider_d',
      'provider_e',
      'provider_f',
      'smtp',
    ]);
    for (const g of res.body.data) {
      expect(Object.keys(g).sort()).toEqual(
        [
          'apiChange',
          'authentication',
          'dnsChange',
          'name',
          'provider',
          'sender',
          'source',
          'verifiedAt',
          'webhookChange',
        ].sort(),
      );
    }
    expect(res.body.data[6].authentication).toMatch(/certificate verification on/);
  });

  it('plans a migration: the audit plus guide, steps, rollback and examples', async () => {
    const res = await get('/api/v1/mail/migration-plan?domain=softfail.test&provider=provider_c&download=1');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="mail-migration-plan.json"');
    const d = res.body.data;
    expect(d.domain).toBe('softfail.test');
    expect(d.spf.proposed).toBe('v=spf1 include:leaf.test include:_spf.platform.test ~all');
    expect(d.guide.provider).toBe('provider_c');
    expect(d.steps.map((s: { id: string }) => s.id)).toEqual([
      'audit',
      'add_domain',
      'coexist',
      'verify',
      'test',
      'controlled_send',
      'switch',
      'monitor',
      'retire',
    ]);
    expect(d.example).toContain('POST "$BASE_URL/v1/mail/send"');
    expect(d.sdkExample).toContain('Bearer');
    expect(d.rollback.length).toBeGreaterThan(0);
    expect(d.contactMigration).toMatch(/do not transfer/);
  });

  it('refuses an unknown provider', async () => {
    const res = await get('/api/v1/mail/migration-plan?domain=simple.test&provider=other');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_provider');
  });
});

describe('/v1/mail/migration/checklist', () => {
  const qs = '?domain=simple.test&provider=smtp';

  it('needs a key', async () => {
    expect((await t.rest('GET', `/v1/mail/migration/checklist${qs}`)).status).toBe(401);
  });

  it('saves progress under a revision; a stale revision is 409, an unknown step 400', async () => {
    const { key } = await t.createKey();
    const empty = await t.rest('GET', `/v1/mail/migration/checklist${qs}`, { key });
    expect(empty.status).toBe(200);
    expect(empty.body.data).toEqual({ domain: 'simple.test', provider: 'smtp', completed: [], revision: 0, updatedAt: null });

    const body = { domain: 'simple.test', provider: 'smtp', completed: ['add_domain', 'audit'], revision: 0 };
    const saved = await t.rest('PUT', '/v1/mail/migration/checklist', { key, body });
    expect(saved.status).toBe(200);
    expect(saved.body.data).toMatchObject({ completed: ['audit', 'add_domain'], revision: 1, updatedAt: expect.any(String) });

    const stale = await t.rest('PUT', '/v1/mail/migration/checklist', { key, body: { ...body, completed: ['audit'] } });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('revision_conflict');

    const next = await t.rest('PUT', '/v1/mail/migration/checklist', {
      key,
      body: { ...body, completed: ['audit', 'add_domain', 'coexist'], revision: 1 },
    });
    expect(next.body.data.revision).toBe(2);

    const bad = await t.rest('PUT', '/v1/mail/migration/checklist', {
      key,
      body: { ...body, completed: ['launch'], revision: 2 },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_step');

    const withUpdatedAt = await t.rest('PUT', '/v1/mail/migration/checklist', {
      key,
      body: { ...body, revision: 2, updatedAt: new Date().toISOString() },
    });
    expect(withUpdatedAt.status).toBe(400);

    // Another workspace sees only its own progress.
    const other = await t.createKey();
    const theirs = await t.rest('GET', `/v1/mail/migration/checklist${qs}`, { key: other.key });
    expect(theirs.body.data.revision).toBe(0);
  });

  it('exactly one of many concurrent writers of the same revision wins', async () => {
    const { key } = await t.createKey();
    const body = { domain: 'race.test', provider: 'provider_a', completed: ['audit'], revision: 0 };
    const results = await Promise.all(
      Array.from({ length: 6 }, () => t.rest('PUT', '/v1/mail/migration/checklist', { key, body })),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(5);
  });
});
