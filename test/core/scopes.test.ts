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
