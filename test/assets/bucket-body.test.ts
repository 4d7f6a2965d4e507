import { startTestPlatform, type TestPlatform } from '../support/platform';

/**
 * A bucket's body is declared once (subgraphs/assets/buckets/body.ts) for the Assets bucket routes
 * and the object-store bucket routes: `retention_days` is at most 36,500 on every route that takes
 * it, and the service holds the same maximum for GraphQL.
 */
describe('one bucket body', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startTestPlatform();
  });
  afterAll(async () => {
    await t.stop();
  });

  it('POST and PUT /api/v1/assets/buckets refuse retention_days above 36,500 and take 36,500', async () => {
    const { key } = await t.createKey();
    const over = await t.rest('POST', '/api/v1/assets/buckets', { key, body: { name: 'long', retention_days: 36_501 } });
    expect(over.status).toBe(400);
    const made = await t.rest('POST', '/api/v1/assets/buckets', { key, body: { name: 'long', retention_days: 36_500 } });
    expect(made.status).toBe(201);
    expect(made.body.data.retention_days).toBe(36_500);
    const id = made.body.data.id as string;
    const put = await t.rest('PUT', `/api/v1/assets/buckets/${id}`, {
      key,
      body: { retention_days: 36_501 },
      headers: { 'if-match': `"${made.body.data.revision}"` },
    });
    expect(put.status).toBe(400);
    const objstore = await t.rest('POST', '/api/v1/assets/objstore-buckets', {
      key,
      body: { name: 'ev', retention_days: 36_501 },
    });
    expect(objstore.status).toBe(400);
  });

  it('GraphQL createAssetBucket holds the same maximum', async () => {
    const { key } = await t.createKey();
    const r = await t.gql(
      'mutation($input: AssetBucketInput!) { createAssetBucket(input: $input) { id } }',
      { input: { name: 'gql', retentionDays: 36_501 } },
      key,
    );
    expect(r.errors?.[0]?.extensions?.code).toBe('validation_failed');
  });

  it('the OpenAPI document gives both bucket bodies the same retention_days', async () => {
    const doc = (await t.rest('GET', '/api/v1/openapi.json')).body;
    const bodyOf = (p: string, m: string) => doc.paths[p][m].requestBody.content['application/json'].schema;
    const assets = bodyOf('/api/v1/assets/buckets', 'post').properties.retention_days;
    expect(assets).toEqual(bodyOf('/api/v1/assets/objstore-buckets', 'post').properties.retention_days);
    expect(assets).toEqual(bodyOf('/api/v1/assets/buckets/{bucketID}', 'put').properties.retention_days);
    expect(assets.anyOf[0]).toEqual({ type: 'integer', minimum: 0, maximum: 36_500 });
  });
});
