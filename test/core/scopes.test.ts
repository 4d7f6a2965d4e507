import { ALL_SCOPES, scopesOfRole } from '../../core/scopes';
import { startTestPlatform, uniqueName, type TestPlatform } from '../support/platform';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
}, 60_000);
afterAll(async () => t?.stop());

const SITES = '/api/v1/publisher/sites';
const OPTIONS = '/api/v1/publisher/runtime-options';

describe('scopes are enforced', () => {
  it('a key without publisher:write gets 403 insufficient_scope with the envelope; with publisher:read it reads', async () => {
    const { key } = await t.createKey({ scopes: ['publisher:read'] });
    expect((await t.rest('GET', OPTIONS, { key })).status).toBe(200);
    const create = await t.rest('POST', SITES, { key, body: { name: 'Scoped' } });
    expect(create.status).toBe(403);
    expect(create.body).toMatchObject({ success: false, error: { code: 'insufficient_scope' } });
  });

  it('a key without publisher:read cannot read through the bridge nor directly through GraphQL', async () => {
    const { key } = await t.createKey({ scopes: ['identity:read'] });
    const rest = await t.rest('GET', OPTIONS, { key });
    expect(rest.status).toBe(403);
    expect(rest.body).toMatchObject({ success: false, error: { code: 'insufficient_scope' } });
    const gql = await t.gql('{ runtimeOptions { version } }', {}, key);
    expect(gql.errors?.[0]?.extensions?.code).toBe('insufficient_scope');
    const projects = await t.gql('{ projects { id } }', {}, key);
    expect(projects.errors).toBeUndefined();
    const created = await t.gql('mutation { createProject(name: "No") { id } }', {}, key);
    expect(created.errors?.[0]?.extensions?.code).toBe('insufficient_scope');
  });

  it('a key created without --scopes stores every scope its role allows', async () => {
    const identity = t.platform.services.identity;
    const owner = await identity.createApiKey({ accountSlug: uniqueName('sc') });
    expect(owner.scopes).toEqual([...ALL_SCOPES]);
    const reader = await identity.createApiKey({ accountSlug: uniqueName('sc'), role: 'read_only' });
    expect(reader.scopes).toEqual(scopesOfRole('read_only'));
    const stored = await t.platform.conn.collection('api_keys').findOne({ _id: reader.keyId as never });
    expect(stored?.scopes).toEqual(scopesOfRole('read_only'));
    expect(reader.scopes).toContain('publisher:read');
    expect(reader.scopes).not.toContain('publisher:write');
  });

  it('approvals:decide is an owner default; a member holds it only when it is named', async () => {
    const identity = t.platform.services.identity;
    const account = uniqueName('sc');
    const owner = await identity.createApiKey({ accountSlug: account });
    expect(owner.scopes).toContain('approvals:decide');
    const member = await identity.createApiKey({ accountSlug: account, role: 'member' });
    expect(member.scopes).not.toContain('approvals:decide');
    expect(member.scopes).toContain('assets:write');
    const granted = await identity.createApiKey({
      accountSlug: account,
      role: 'member',
      scopes: ['assets:read', 'approvals:decide'],
    });
    expect(granted.scopes).toEqual(['assets:read', 'approvals:decide']);
    await expect(
      identity.createApiKey({ accountSlug: account, role: 'read_only', scopes: ['approvals:decide'] }),
    ).rejects.toMatchObject({ code: 'invalid_scope' });
  });

  it('refuses unknown scopes and scopes beyond the role', async () => {
    const identity = t.platform.services.identity;
    await expect(
      identity.createApiKey({ accountSlug: uniqueName('sc'), scopes: ['publisher:everything'] }),
    ).rejects.toMatchObject({
      code: 'invalid_scope',
      status: 400,
    });
    await expect(
      identity.createApiKey({ accountSlug: uniqueName('sc'), role: 'read_only', scopes: ['publisher:write'] }),
    ).rejects.toMatchObject({ code: 'invalid_scope' });
  });

  it('a key stored before scopes were recorded (empty list) keeps its role scopes', async () => {
    const identity = t.platform.services.identity;
    const old = await identity.createApiKey({ accountSlug: uniqueName('sc') });
    await t.platform.conn.collection('api_keys').updateOne({ _id: old.keyId as never }, { $set: { scopes: [] } });
    const create = await t.rest('POST', SITES, { key: old.key, body: { name: 'Legacy' } });
    expect(create.status).toBe(202);
  });
});

describe('every authenticated area checks its own scopes', () => {
  const project = async (accountId: string) =>
    (await t.platform.services.identity.createProject(accountId, uniqueName('sc')))._id as string;

  it('mail: mail:read reads events; a key without it gets 403 insufficient_scope', async () => {
    const reader = await t.createKey({ scopes: ['mail:read'] });
    expect((await t.rest('GET', '/v1/mail/events', { key: reader.key })).status).toBe(200);
    const other = await t.createKey({ scopes: ['publisher:read'] });
    const res = await t.rest('GET', '/v1/mail/events', { key: other.key });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('insufficient_scope');
    const send = await t.rest('POST', '/v1/mail/send', {
      key: reader.key,
      body: { from: 'a@example.com', to: ['b@example.com'], subject: 's', text: 't' },
    });
    expect([send.status, send.body.error.code]).toEqual([403, 'insufficient_scope']);
  });

  it('commerce: refused in its own envelope without commerce:read, and writes need commerce:write', async () => {
    const none = await t.createKey({ scopes: ['publisher:read'] });
    const res = await t.rest('GET', `/api/v1/projects/${await project(none.accountId)}/commerce`, { key: none.key });
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: 'COMMERCE_FORBIDDEN', details: { required_scope: 'commerce:read' } });

    const reader = await t.createKey({ scopes: ['commerce:read'] });
    const projectId = await project(reader.accountId);
    expect((await t.rest('GET', `/api/v1/projects/${projectId}/commerce`, { key: reader.key })).status).not.toBe(403);
    const write = await t.rest('POST', `/api/v1/projects/${projectId}/commerce/connect`, {
      key: reader.key,
      body: { kind: 'app', store_domain: 'x.example', development_branch: 'main' },
    });
    expect(write.status).toBe(403);
    expect(write.body.error).toMatchObject({ code: 'COMMERCE_FORBIDDEN', details: { required_scope: 'commerce:write' } });
  });

  it('activity: activity:read reads a project feed; a key without it gets 403 insufficient_scope', async () => {
    const reader = await t.createKey({ scopes: ['activity:read'] });
    const projectId = await project(reader.accountId);
    expect((await t.rest('GET', `/api/v1/projects/${projectId}/operation-activity`, { key: reader.key })).status).toBe(200);
    const other = await t.createKey({ scopes: ['publisher:read'], account: reader.account });
    const res = await t.rest('GET', `/api/v1/projects/${projectId}/operation-activity`, { key: other.key });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('insufficient_scope');
  });
});
