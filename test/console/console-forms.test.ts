import { startTestPlatform, type TestPlatform } from '../support/platform';
import { base, connectStorefront, tenant } from '../commerce/support';

/**
 * The requests the console's edit forms send (console/src/pages/Commerce.tsx, Assets.tsx), through
 * the real bridge: the GraphQL fields they read exist, and the routes treat their bodies as the
 * forms promise (non-secret fields sent in full, a secret left out kept; If-Match on the revision).
 */
let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.stop());

describe('the commerce environment form', () => {
  it('reads the fields it prefills, and a save without a secret keeps the stored one', async () => {
    const tn = await tenant(t);
    await connectStorefront(t, tn);
    const url = `${base(tn.projectId)}/environments/preview`;
    const first = await t.rest('PUT', url, {
      key: tn.key,
      body: {
        app_url: 'https://shop.example',
        storefront_id: null,
        customer_account_client_id: null,
        customer_account_url: null,
        memory_mb: null,
        public_storefront_token: tn.store.storefront_token,
      },
    });
    expect(first.status).toBe(200);
    // The form's second save: every non-secret field, no secret typed in.
    const second = await t.rest('PUT', url, {
      key: tn.key,
      body: {
        app_url: 'https://shop2.example',
        storefront_id: null,
        customer_account_client_id: null,
        customer_account_url: null,
        memory_mb: 256,
      },
    });
    expect(second.status).toBe(200);
    const g = await t.gql(
      `query ($projectId: ID!) { commerceConnection(projectId: $projectId) { kind environments {
        name appUrl configPath configName clientId scopes storefrontId customerAccountClientId customerAccountUrl
        hasClientSecret hasAutomationToken hasPublicStorefrontToken hasPrivateStorefrontToken hasCustomerAccountSecret
        hasSessionSecret memoryMb } } }`,
      { projectId: tn.projectId },
      tn.key,
    );
    expect(g.errors).toBeUndefined();
    const env = g.data.commerceConnection.environments.find((e: { name: string }) => e.name === 'preview');
    expect(env).toMatchObject({ appUrl: 'https://shop2.example', hasPublicStorefrontToken: true, memoryMb: 256 });
    expect(JSON.stringify(g.data)).not.toContain(tn.store.storefront_token);
    // An unknown field is refused with the API's code, which the form shows.
    const bad = await t.rest('PUT', url, { key: tn.key, body: { client_id: 'x' } });
    expect(bad.status).toBe(422);
    expect(bad.body.error.code).toBe('COMMERCE_INVALID_CONFIGURATION');
  });
});

describe('the asset details form', () => {
  it('patches original name, cache control and visibility with If-Match on the revision', async () => {
    const { key } = await t.createKey();
    const form = new FormData();
    form.set('key', 'console/hello.txt');
    form.set('file', new Blob(['hello']), 'hello.txt');
    const up = await fetch(`${t.bridgeUrl}/api/v1/assets/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
    expect(up.status).toBe(201);
    const asset = ((await up.json()) as { data: { id: string; revision: number } }).data;
    const g = await t.gql(
      `query ($id: ID!) { asset(id: $id) { originalName cacheControl revision visibility } }`,
      { id: asset.id },
      key,
    );
    expect(g.errors).toBeUndefined();
    const revision = g.data.asset.revision;
    const patch = (ifMatch: number) =>
      t.rest('PATCH', `/api/v1/assets/${asset.id}`, {
        key,
        headers: { 'if-match': `"${ifMatch}"` },
        body: { original_name: 'Hello.txt', cache_control: 'public, max-age=60', visibility: 'private' },
      });
    const saved = await patch(revision);
    expect(saved.status).toBe(200);
    expect(saved.body.data).toMatchObject({
      original_name: 'Hello.txt',
      cache_control: 'public, max-age=60',
      visibility: 'private',
    });
    const stale = await patch(revision);
    expect(stale.status).toBe(412);
    expect(typeof stale.body.error.code).toBe('string');
  });
});
