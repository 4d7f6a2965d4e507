import { randomBytes } from 'node:crypto';
import { buildSchema, getIntrospectionQuery, parse, specifiedRules, validate } from 'graphql';
import { readFileSync } from 'node:fs';
import { areaRoutes } from '../../app/areas';
import { MAX_ALIASES, MAX_QUERY_COST, MAX_QUERY_DEPTH, ROUTER_VALIDATION_RULES } from '../../core/graphql-limits';
import { startTestPlatform, type TestPlatform } from '../support/platform';

const post = (t: TestPlatform, query: string, key?: string) =>
  fetch(t.routerUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ query }),
  });

describe('rate limit, depth, aliases', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startTestPlatform({ RATE_LIMIT_PER_MINUTE: '5' }, { workers: false });
  }, 60_000);
  afterAll(async () => t?.stop());

  it('the bridge answers 429 rate_limited with Retry-After and the envelope past the per-key limit, per key', async () => {
    const a = await t.createKey();
    const b = await t.createKey();
    for (let i = 0; i < 5; i++)
      expect((await t.rest('GET', '/api/v1/publisher/runtime-options', { key: a.key })).status).toBe(200);
    const limited = await t.rest('GET', '/api/v1/publisher/runtime-options', { key: a.key });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited.body).toMatchObject({ success: false, error: { code: 'rate_limited' } });
    expect((await t.rest('GET', '/api/v1/publisher/runtime-options', { key: b.key })).status).toBe(200);
  });

  it('the router answers 429 rate_limited with Retry-After past the per-key limit', async () => {
    const c = await t.createKey();
    for (let i = 0; i < 5; i++) expect((await post(t, '{ runtimeOptions { version } }', c.key)).status).toBe(200);
    const limited = await post(t, '{ runtimeOptions { version } }', c.key);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await limited.json()) as any).errors[0].extensions).toMatchObject({ code: 'rate_limited', status: 429 });
  });

  it('keys the bucket by the parsed key: `Bearer  KEY` and `bearer KEY` share one', async () => {
    const { key } = await t.createKey();
    const spellings = [`Bearer ${key}`, `Bearer  ${key}`, `bearer ${key}`, `BEARER ${key}  `, ` Bearer\t${key}`];
    for (const authorization of spellings) {
      const res = await fetch(`${t.bridgeUrl}/api/v1/publisher/runtime-options`, { headers: { authorization } });
      expect(res.status).toBe(200);
    }
    const limited = await fetch(`${t.bridgeUrl}/api/v1/publisher/runtime-options`, {
      headers: { authorization: `bearer   ${key}` },
    });
    expect(limited.status).toBe(429);
  });

  it('refuses queries deeper than the depth limit and documents with too many aliases', async () => {
    const d = await t.createKey();
    let inner = '{ id }';
    for (let i = 0; i < MAX_QUERY_DEPTH; i++) inner = `{ site ${inner} }`;
    const deep = await post(t, `{ projects ${inner} }`, d.key);
    expect(deep.status).toBe(400);
    expect(((await deep.json()) as any).errors.map((e: any) => e.extensions.code)).toContain('query_too_deep');
    // Introspection is bounded by the schema: graphql's own introspection query passes (development).
    const stock = await post(t, getIntrospectionQuery(), d.key);
    expect(stock.status).toBe(200);
    expect(((await stock.json()) as any).data.__schema.queryType.name).toBe('Query');

    const e = await t.createKey();
    const aliases = Array.from({ length: MAX_ALIASES + 1 }, (_, i) => `a${i}: __typename`).join(' ');
    const wide = await post(t, `{ ${aliases} }`, e.key);
    expect(wide.status).toBe(400);
    expect(((await wide.json()) as any).errors.map((x: any) => x.extensions.code)).toContain('too_many_aliases');
  });
});

it('refuses lists nested in lists beyond the cost limit, however shallow; counts written limits; ignores introspection', () => {
  const schema = buildSchema(`
    type Query { shelves(limit: Int): [Shelf!]! }
    type Shelf { books(limit: Int): [Book!]! }
    type Book { pages(limit: Int): [Page!]! }
    type Page { n: Int }
  `);
  const codes = (q: string) =>
    validate(schema, parse(q), [...specifiedRules, ...ROUTER_VALIDATION_RULES]).map((e) => e.extensions?.code);
  // 25 × 25 × 25 pages by default: 16,275 > MAX_QUERY_COST, at depth 4.
  expect(codes('{ shelves { books { pages { n } } } }')).toEqual(['query_too_costly']);
  // With small limits written in the document: 2 + 2·3 + 2·3·4 = 32.
  expect(codes('{ shelves(limit: 2) { books(limit: 3) { pages(limit: 4) { n } } } }')).toEqual([]);
  expect(MAX_QUERY_COST).toBeLessThan(25 * 25 * 25);
  // A tool's introspection query is not data.
  expect(codes('{ __schema { types { fields { args { type { name } } } } } }')).toEqual([]);
});

it('every REST route document stays within the depth, alias and cost limits', () => {
  const schema = buildSchema(readFileSync('schema/supergraph.graphql', 'utf8'), { assumeValid: true });
  const over = areaRoutes().flatMap((r) =>
    validate(schema, parse(r.document), [...specifiedRules, ...ROUTER_VALIDATION_RULES])
      .filter((e) => ['query_too_deep', 'too_many_aliases', 'query_too_costly'].includes(String(e.extensions?.code)))
      .map((e) => `${r.area}/${r.operation}: ${e.message}`),
  );
  expect(over).toEqual([]);
});

describe('introspection in production', () => {
  let p: TestPlatform;
  beforeAll(async () => {
    const hex = () => randomBytes(32).toString('hex');
    p = await startTestPlatform(
      {
        NODE_ENV: 'production',
        INTERNAL_SIGNING_KEY: hex(),
        SECRET_ENCRYPTION_KEY: hex(),
        CURSOR_SIGNING_KEY: hex(),
        // Production names every outside system and its secrets (no stand-ins, no development secrets).
        PAYMENT_PROVIDER_URL: 'http://127.0.0.1:9',
        PAYMENT_WEBHOOK_SECRET: `whsec_${randomBytes(24).toString('base64')}`,
        COMMERCE_PLATFORM_URL: 'http://127.0.0.1:9',
        COMMERCE_WEBHOOK_SECRET: `whsec_${randomBytes(24).toString('base64')}`,
        MAIL_SMTP_URL: 'smtp://127.0.0.1:9',
        MAIL_DNS_SERVERS: '127.0.0.1:9',
        ASSETS_DNS_SERVERS: '127.0.0.1:9',
        PUBLISHER_DNS_SERVERS: '127.0.0.1:9',
      },
      { workers: false },
    );
  }, 60_000);
  afterAll(async () => p?.stop());

  it('is refused when NODE_ENV=production', async () => {
    const { key } = await p.createKey();
    const res = await post(p, '{ __schema { queryType { name } } }', key);
    const body = (await res.json()) as any;
    expect(body.data?.__schema).toBeUndefined();
    expect(body.errors?.length).toBeGreaterThan(0);
  });
});
