import fs from 'node:fs';
import path from 'node:path';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/**
 * The rows of the areas that landed after the contract (activity, billing, mail, assets) say what
 * their services enforce — the failures the fuzz stage found on them (decision 0007) — and the
 * service bugs it found stay fixed.
 */
const doc = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'schema', 'openapi.json'), 'utf8'));
const op = (p: string, m: string) => doc.paths[p][m];
const param = (o: any, name: string) => o.parameters.find((x: any) => x.name === name);
const body = (o: any) => o.requestBody.content['application/json'].schema;

describe('precise rows (a schema-valid request is never a 400)', () => {
  it('activity: limit 1–100 as an integer, UUID scope ids and <kind>:<UUID> item ids (spec 7.5 400s)', () => {
    const list = op('/api/v1/projects/{projectID}/operation-activity', 'get');
    expect(param(list, 'limit').schema).toEqual({ type: 'integer', minimum: 1, maximum: 100 });
    expect(param(list, 'cursor').schema).toEqual({ type: 'string', minLength: 1 });
    expect(param(list, 'projectID').schema.pattern).toMatch(/\[1-8\]/);
    const item = op('/api/v1/projects/{projectID}/agent-activity/{actionID}', 'get');
    expect(param(item, 'actionID').schema.pattern).toMatch(/^\^\[a-z\]\[a-z0-9_\]\*:/);
    expect(Object.keys(op('/api/v1/agents/approvals/{approvalID}/decision', 'post').responses)).toEqual(
      expect.arrayContaining(['409', '410']),
    );
  });

  it('billing: products, currencies, funding modes and providers as enums; credits and limit bounded', () => {
    const usage = op('/api/v1/billing/ai-credits/usage', 'get');
    expect(param(usage, 'product').schema.enum).toEqual(['assets', 'agents', 'workflows']);
    expect(param(usage, 'limit').schema).toEqual({ type: 'integer', minimum: 1, maximum: 100 });
    const quote = body(op('/api/v1/billing/ai-credits/top-ups/quote', 'post'));
    expect(quote.properties.currency.enum).toEqual(['NGN', 'USD']);
    expect(quote.properties.credits).toMatchObject({ type: 'integer', minimum: 1 });
    expect(body(op('/api/v1/billing/ai-credits/funding', 'put')).properties.mode.enum).toEqual(['managed', 'byok']);
    expect(Object.keys(op('/api/v1/billing/ai-credits/top-ups/checkout', 'post').responses)).toEqual(
      expect.arrayContaining(['404', '409', '410']),
    );
  });

  it('mail: the three public routes need no key; lists take integer limits and RFC 3339 times', () => {
    for (const p of ['/api/v1/mail/audit', '/api/v1/mail/migration-plan', '/api/v1/mail/migration-guides']) {
      expect(op(p, 'get').security).toEqual([]);
      expect(op(p, 'get').responses['401']).toBeUndefined();
    }
    const events = op('/v1/mail/events', 'get');
    expect(param(events, 'from').schema.format).toBe('date-time');
    expect(param(events, 'limit').schema).toEqual({ type: 'integer', minimum: 1, maximum: 100 });
    expect(param(op('/v1/mail/webhooks/{webhookId}/deliveries', 'get'), 'status').schema.enum).toEqual([
      'pending',
      'succeeded',
      'failed',
    ]);
    expect(Object.keys(op('/v1/mail/migration/checklist', 'put').responses)).toContain('409');
  });

  it('assets: every If-Match route documents 412 and 428; bulk items are one shape per action', () => {
    for (const [p, m] of [
      ['/api/v1/assets/{assetID}', 'patch'],
      ['/api/v1/assets/{assetID}', 'delete'],
      ['/api/v1/assets/buckets/{bucketID}', 'put'],
      ['/api/v1/assets/buckets/{bucketID}', 'delete'],
      ['/api/v1/assets/{assetID}/metadata', 'patch'],
    ]) {
      expect(Object.keys(op(p, m).responses)).toEqual(expect.arrayContaining(['412', '428']));
    }
    const items = body(op('/api/v1/assets/bulk', 'post')).properties.items.items.anyOf;
    expect(items.map((i: any) => i.properties.action.const ?? i.properties.action.enum?.[0])).toEqual([
      'delete',
      'visibility',
      'add_tags',
    ]);
    expect(items[1].required).toContain('visibility');
  });
});

describe('through the bridge', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startTestPlatform();
  }, 120_000);
  afterAll(async () => {
    await t?.stop();
  });

  it('refuses a JSON null body (not an object) with 400, where no body at all reads as {}', async () => {
    const { key } = await t.createKey({ plan: 'pro' });
    const nul = await t.rest('PUT', '/api/v1/assets/policy', { key, rawBody: 'null' });
    expect([nul.status, nul.body.error.code]).toEqual([400, 'invalid_request']);
    const none = await t.rest('PUT', '/api/v1/assets/policy', { key, headers: { 'content-type': 'application/json' } });
    expect(none.status).toBe(200);
  });

  it('opens an upload session for an empty file (was a 500: 0/0 parts)', async () => {
    const { key } = await t.createKey({ plan: 'pro' });
    const res = await t.rest('POST', '/api/v1/assets/upload-sessions', {
      key,
      body: { file_name: 'empty.txt', file_size: 0, mode: 'single' },
    });
    expect(res.status).toBe(201);
    expect(res.body.data.part_count).toBe(1);
  });

  it('refuses a workflow draft whose step config holds a NUL byte in a key with 400 forbidden_json_key, as every JSON field (was a 500 from BSON)', async () => {
    const { key } = await t.createKey({ plan: 'pro' });
    const res = await t.rest('POST', '/api/v1/assets/workflows', {
      key,
      body: {
        name: 'w',
        draft: { trigger: { type: 'manual' }, steps: [{ id: 's1', type: 'tag', config: { a: { 'x\u0000y': 1 } } }] },
      },
    });
    expect([res.status, res.body.error.code]).toEqual([400, 'forbidden_json_key']);
  });

  it('answers 401 before reading a transformation definition', async () => {
    const res = await t.rest('POST', '/api/v1/assets/transformations', {
      body: { name: 'x' }, // schema-valid, but no operation or format: the service's own 400 once keyed
    });
    expect(res.status).toBe(401);
  });
});
