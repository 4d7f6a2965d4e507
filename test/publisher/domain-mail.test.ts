// Log lines go to a file this test reads back; set before the platform (and its logger) loads.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { decryptSecret } from '../../core/secrets';
import { providerKeyAad } from '../../subgraphs/publisher/mail-settings';

const LOG_FILE = path.join(tmpdir(), `publisher-mail-${process.pid}-${randomBytes(4).toString('hex')}.log`);
process.env.LOG_FILE = LOG_FILE;
process.env.LOG_LEVEL = 'trace';

const { startTestPlatform } = require('../support/platform') as typeof import('../support/platform');
const { projectPath, runningSite, errorBody } = require('./support') as typeof import('./support');

let t: import('../support/platform').TestPlatform;

beforeAll(async () => {
  t = await startTestPlatform({ LOG_LEVEL: 'trace' });
});
afterAll(async () => {
  await t.stop();
  delete process.env.LOG_FILE;
  delete process.env.LOG_LEVEL;
  rmSync(LOG_FILE, { force: true });
});

const setDomain = (key: string, projectId: string, domain: unknown) =>
  t.rest('POST', projectPath(projectId, '/domain'), { key, body: { domain } });

describe('custom domain', () => {
  it('normalises a Unicode name to punycode and answers 200 with the pending domain record', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key);
    const res = await setDomain(key, projectId, 'Bücher.example');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: {
        name: 'xn--bcher-kva.example',
        status: 'pending_verification',
        dns_record: {
          type: 'CNAME',
          name: 'xn--bcher-kva.example',
          value: expect.stringMatching(/^site-[0-9a-f]{6}\.sites\.localhost$/),
        },
        verification_record: {
          type: 'TXT',
          name: '_platform-verification.xn--bcher-kva.example',
          value: expect.stringMatching(/^platform-verification=/),
        },
        expires_at: expect.any(String),
        updated_at: expect.any(String),
      },
    });
    const meta = await t.rest('GET', projectPath(projectId, '/metadata'), { key });
    expect(meta.body.data.installation.domain).toBe('xn--bcher-kva.example');
    expect(meta.body.data.domain).toEqual(res.body.data);
    // The same name again is a no-op; another replaces it.
    expect((await setDomain(key, projectId, 'xn--bcher-kva.example')).body.data).toEqual(res.body.data);
    expect((await setDomain(key, projectId, 'WWW.Example.org')).body.data.name).toBe('www.example.org');
  });

  it.each([
    'http://a.com',
    'a.com/x',
    'a.com:80',
    'user@a.com',
    '1.2.3.4',
    '[::1]',
    'localhost',
    '-a.com',
    'a.com.',
    'a .com',
    'a.123',
  ])('rejects %j with 400 invalid_domain', async (domain) => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key);
    const res = await setDomain(key, projectId, domain);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(errorBody('invalid_domain'));
  });

  it('refuses platform addresses, and a domain another site holds (409 domain_in_use) until it lets go', async () => {
    const a = await t.createKey();
    const b = await t.createKey();
    const siteA = await runningSite(t, a.key);
    const siteB = await runningSite(t, b.key);
    const reserved = await setDomain(a.key, siteA, 'anything.sites.localhost');
    expect([reserved.status, reserved.body.error.code]).toEqual([400, 'invalid_domain']);
    const name = `shop-${randomBytes(3).toString('hex')}.example`;
    expect((await setDomain(a.key, siteA, name)).status).toBe(200);
    const taken = await setDomain(b.key, siteB, name.toUpperCase());
    expect(taken.status).toBe(409);
    expect(taken.body).toEqual(errorBody('domain_in_use'));
    expect((await setDomain(a.key, siteA, `www.${name}`)).status).toBe(200);
    expect((await setDomain(b.key, siteB, name)).status).toBe(200);
  });

  it('validates the body shape (400 invalid_request)', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key);
    for (const body of [{}, { domain: 42 }, { domain: 'a.com', extra: 1 }]) {
      const res = await t.rest('POST', projectPath(projectId, '/domain'), { key, body });
      expect([res.status, res.body.error.code]).toEqual([400, 'invalid_request']);
    }
  });
});

describe('mail settings', () => {
  const emptyView = {
    enabled: true,
    transactional: { configured: false, sender_email: null, verified: false },
    newsletter_provider: {
      configured: false,
      domain: null,
      region: null,
      from_email: null,
      from_name: null,
      has_api_key: false,
      updated_at: null,
    },
  };

  it('sets a verified transactional sender (200); an unverified one is 400 sender_not_verified', async () => {
    const { key, accountId } = await t.createKey();
    const projectId = await runningSite(t, key, { mail_enabled: true });
    const initial = await t.rest('GET', projectPath(projectId, '/mail/sender'), { key });
    expect(initial.status).toBe(200);
    expect(initial.body.data).toEqual(emptyView);

    const unverified = await t.rest('PUT', projectPath(projectId, '/mail/sender'), {
      key,
      body: { sender_email: 'news@example.com' },
    });
    expect(unverified.status).toBe(400);
    expect(unverified.body).toEqual(errorBody('sender_not_verified'));
    const malformed = await t.rest('PUT', projectPath(projectId, '/mail/sender'), {
      key,
      body: { sender_email: 'not an address' },
    });
    expect([malformed.status, malformed.body.error.code]).toEqual([400, 'invalid_email']);
    // Another account's verified sender does not count.
    const other = await t.createKey();
    await t.platform.services.identity.senders.verify(other.accountId, 'news@example.com');
    expect(
      (await t.rest('PUT', projectPath(projectId, '/mail/sender'), { key, body: { sender_email: 'news@example.com' } })).status,
    ).toBe(400);

    await t.platform.services.identity.senders.verify(accountId, 'News@Example.com');
    const set = await t.rest('PUT', projectPath(projectId, '/mail/sender'), { key, body: { sender_email: 'news@EXAMPLE.com' } });
    expect(set.status).toBe(200);
    expect(set.body.data.transactional).toEqual({ configured: true, sender_email: 'news@example.com', verified: true });
    const meta = await t.rest('GET', projectPath(projectId, '/metadata'), { key });
    expect(meta.body.data.mail).toEqual({
      enabled: true,
      transactional_configured: true,
      sender_verified: true,
      newsletter_provider_configured: false,
    });
  });

  it('verifies a sender with `platform senders verify`', async () => {
    const { key, account } = await t.createKey();
    const projectId = await runningSite(t, key);
    const uri = `mongodb://127.0.0.1:27017/${t.platform.conn.name}`;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        path.join(__dirname, '..', '..', 'bin', 'platform.js'),
        'senders',
        'verify',
        '--account',
        account,
        '--email',
        'ops@example.net',
        '--json',
      ],
      { env: { ...process.env, MONGODB_URI: uri, LOG_FILE: '', LOG_LEVEL: 'silent' } },
    );
    expect(JSON.parse(stdout)).toMatchObject({ email: 'ops@example.net', verified: true, account });
    const set = await t.rest('PUT', projectPath(projectId, '/mail/sender'), { key, body: { sender_email: 'ops@example.net' } });
    expect(set.status).toBe(200);
  });

  it('stores the provider api_key encrypted, never returns or logs it, keeps it when omitted, and deletes it all', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key, { mail_enabled: true });
    const apiKey = `key-${randomBytes(16).toString('hex')}`;
    const body = {
      domain: 'mg.example.com',
      region: 'eu',
      api_key: apiKey,
      from_email: 'letters@mg.example.com',
      from_name: 'The Letters',
    };

    const missingKey = await t.rest('PUT', projectPath(projectId, '/mail/provider'), {
      key,
      body: { ...body, api_key: undefined },
    });
    expect([missingKey.status, missingKey.body.error.code]).toEqual([400, 'api_key_required']);
    const offDomain = await t.rest('PUT', projectPath(projectId, '/mail/provider'), {
      key,
      body: { ...body, from_email: 'x@elsewhere.com' },
    });
    expect([offDomain.status, offDomain.body.error.code]).toEqual([400, 'invalid_from_email']);
    // The usual setup: news@example.com sent through mg.example.com (DMARC relaxed alignment).
    const parent = await t.rest('PUT', projectPath(projectId, '/mail/provider'), {
      key,
      body: { ...body, from_email: 'news@example.com' },
    });
    expect(parent.status).toBe(200);
    expect(parent.body.data.newsletter_provider.from_email).toBe('news@example.com');
    const badDomain = await t.rest('PUT', projectPath(projectId, '/mail/provider'), {
      key,
      body: { ...body, domain: 'https://mg.example.com' },
    });
    expect([badDomain.status, badDomain.body.error.code]).toEqual([400, 'invalid_domain']);
    const badKey = await t.rest('PUT', projectPath(projectId, '/mail/provider'), {
      key,
      body: { ...body, api_key: `${apiKey} with spaces` },
    });
    expect([badKey.status, badKey.body.error.code]).toEqual([400, 'invalid_api_key']);
    expect(JSON.stringify(badKey.body)).not.toContain(apiKey);

    const put = await t.rest('PUT', projectPath(projectId, '/mail/provider'), { key, body });
    expect(put.status).toBe(200);
    const provider = {
      configured: true,
      domain: 'mg.example.com',
      region: 'eu',
      from_email: 'letters@mg.example.com',
      from_name: 'The Letters',
      has_api_key: true,
      updated_at: expect.any(String),
    };
    expect(put.body.data.newsletter_provider).toEqual(provider);
    const viaProvider = await t.rest('GET', projectPath(projectId, '/mail/provider'), { key });
    const viaSender = await t.rest('GET', projectPath(projectId, '/mail/sender'), { key });
    expect(viaProvider.body.data.newsletter_provider).toEqual(provider);
    expect(viaSender.body.data).toEqual(viaProvider.body.data);
    const meta = await t.rest('GET', projectPath(projectId, '/metadata'), { key });
    expect(meta.body.data.mail.newsletter_provider_configured).toBe(true);

    const stored = await t.platform.conn.collection('publisher_newsletter_providers').findOne({ _id: projectId as never });
    expect(stored?.apiKeyCiphertext).toMatch(/^v1\.[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(JSON.stringify(stored)).not.toContain(apiKey);
    expect(decryptSecret(stored!.apiKeyCiphertext, providerKeyAad(projectId))).toBe(apiKey);

    // An update without api_key keeps the stored key.
    const renamed = await t.rest('PUT', projectPath(projectId, '/mail/provider'), {
      key,
      body: { ...body, api_key: undefined, from_name: null },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data.newsletter_provider).toMatchObject({ from_name: null, has_api_key: true });
    const kept = await t.platform.conn.collection('publisher_newsletter_providers').findOne({ _id: projectId as never });
    expect(decryptSecret(kept!.apiKeyCiphertext, providerKeyAad(projectId))).toBe(apiKey);

    // Through GraphQL too, nothing selects the key.
    const gql = await t.gql(
      'query($p: ID!) { siteMailSettings(projectId: $p) { newsletterProvider { hasApiKey domain } } }',
      { p: projectId },
      key,
    );
    expect(JSON.stringify(gql)).not.toContain(apiKey);

    const del = await t.rest('DELETE', projectPath(projectId, '/mail/provider'), { key });
    expect(del.status).toBe(200);
    expect(del.body.data.newsletter_provider).toEqual(emptyView.newsletter_provider);
    expect(await t.platform.conn.collection('publisher_newsletter_providers').findOne({ _id: projectId as never })).toBeNull();
    expect((await t.rest('DELETE', projectPath(projectId, '/mail/provider'), { key })).status).toBe(200);

    for (const res of [put, viaProvider, viaSender, meta, renamed, del, missingKey, offDomain, badDomain]) {
      expect(JSON.stringify(res.body)).not.toContain(apiKey);
    }
    const logs = readFileSync(LOG_FILE, 'utf8');
    expect(logs.length).toBeGreaterThan(0); // the platform did log (at trace level) while this ran
    expect(logs).not.toContain(apiKey);
    expect(logs).not.toContain(apiKey.slice(4));
  });
});
