import { randomUUID } from 'node:crypto';
import { createClient } from 'graphql-ws';
import {
  buildClientSchema,
  buildSchema,
  getIntrospectionQuery,
  getNamedType,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLSchema,
  isCompositeType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  type IntrospectionQuery,
  parse,
} from 'graphql';
import WebSocket from 'ws';
import { areaFeeds, areaRoutes, buildSubgraphs } from '../../app/areas';
import { subscriptionSdl } from '../../router/subscriptions';
import { ALL_SCOPES } from '../../core/scopes';
import { type FieldAccess, rootFieldAccess } from '../../core/subgraph-kit';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/**
 * The generated table of issue "scopes on every transport": every operation of the OpenAPI
 * document and every root field of the supergraph (and every graphql-ws subscription) is called
 * (a) without a key → 401 and (b) with a key holding every scope but the one it needs → 403, with a
 * malformed body and query string on REST (authentication comes before validation). Rows come
 * from the documents, so a new route or field is covered without editing this file.
 */

/** Operations anyone may call, with the reason (anything else in the document must be authenticated). */
const PUBLIC_OPERATIONS: Array<{ pattern: RegExp; reason: string }> = [
  { pattern: /^GET \/api\/v1\/mail\/(audit|migration-plan|migration-guides)$/, reason: 'spec 5.6: no authentication' },
  { pattern: /\/workflow-hooks\/\{\w+\}$/, reason: 'spec 5.8: the token in the path plus an HMAC signature' },
  { pattern: /\/widget\b/, reason: 'spec 5.7: browser uploads use a capability token' },
  {
    pattern: /^PUT \/api\/v1\/assets\/uploads\/\{\w+\}(\/parts\/\{\w+\})?$/,
    reason: 'signed session URLs (the signature authorizes)',
  },
  {
    pattern: /^POST \/api\/v1\/(commerce\/webhooks|billing\/webhooks\/payments\/\{\w+\})$/,
    reason: 'inbound webhooks are signed by the sender',
  },
  {
    pattern: /^(GET|DELETE) \/api\/v1\/assets\/mcp$/,
    reason: 'MCP on a stateless server: 405 (no stream) and 404 (no session) before any key',
  },
  { pattern: /^GET \/(healthz|readyz|metrics|api\/v1\/openapi\.json)$/, reason: 'probes and the document itself' },
];
/** Root fields anyone may call, with the reason. */
const PUBLIC_FIELDS: Record<string, string> = {
  'Query.mailAudit': 'spec 5.6: the mail audit needs no authentication',
  'Query.mailMigrationPlan': 'spec 5.6: the migration plan needs no authentication',
  'Query.mailMigrationGuides': 'spec 5.6: the migration guides need no authentication',
};

let t: TestPlatform;
/** A member key holding every scope but the one named. */
const without = new Map<string, string>();
let anyKey: string;
const keyWithout = async (scope: string): Promise<string> => {
  let key = without.get(scope);
  if (!key) {
    key = (await t.createKey({ role: 'member', scopes: ALL_SCOPES.filter((s) => s !== scope) })).key;
    without.set(scope, key);
  }
  return key;
};

beforeAll(async () => {
  t = await startTestPlatform();
  anyKey = (await t.createKey({ role: 'member' })).key;
}, 60_000);
afterAll(async () => t?.stop());

interface Operation {
  method: string;
  path: string;
  scope?: string;
  public: boolean;
  hasBody: boolean;
  bodyTypes: string[];
}

async function operations(): Promise<Operation[]> {
  const doc = (await (await fetch(`${t.bridgeUrl}/api/v1/openapi.json`)).json()) as {
    paths: Record<string, Record<string, Record<string, unknown>>>;
  };
  const out: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const security = op.security as unknown[] | undefined;
      const body = op.requestBody as { content?: Record<string, unknown> } | undefined;
      out.push({
        method: method.toUpperCase(),
        path,
        scope: op['x-scope'] as string | undefined,
        public: Array.isArray(security) && security.length === 0,
        hasBody: Boolean(body),
        bodyTypes: Object.keys(body?.content ?? {}),
      });
    }
  }
  return out;
}

const concrete = (path: string) => path.replace(/\{\w+\}/g, () => randomUUID());
const MALFORMED_QUERY = '?limit=abc&sort=bogus&cursor=%%';

async function call(op: Operation, key?: string): Promise<{ status: number; body: string }> {
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  let body: string | undefined;
  if (op.method !== 'GET' && op.method !== 'DELETE') {
    // A malformed body of the route's own media type (JSON that does not parse, or a broken multipart).
    const type = op.bodyTypes.find((c) => c !== 'application/json') ?? 'application/json';
    headers['content-type'] = type.startsWith('multipart/') ? `${type}; boundary=x` : type;
    body = type === 'application/json' ? '{"unknown_field": [1, ' : '--x\r\nbroken';
  }
  const res = await fetch(`${t.bridgeUrl}${concrete(op.path)}${MALFORMED_QUERY}`, { method: op.method, headers, body });
  return { status: res.status, body: await res.text() };
}

describe('REST: every operation of the OpenAPI document', () => {
  it('answers 401 without a key and 403 with a key lacking its scope, before validating the request', async () => {
    const ops = await operations();
    expect(ops.length).toBeGreaterThan(150);
    const wrong: string[] = [];
    for (const op of ops) {
      const name = `${op.method} ${op.path}`;
      if (op.public) {
        if (!PUBLIC_OPERATIONS.some((p) => p.pattern.test(name))) wrong.push(`${name}: public but not in the allow-list`);
        continue;
      }
      const anonymous = await call(op);
      if (anonymous.status !== 401) wrong.push(`${name} without a key: ${anonymous.status} ${anonymous.body.slice(0, 120)}`);
      if (!op.scope) continue; // a key alone is enough (no scope to lack)
      const lacking = await call(op, await keyWithout(op.scope));
      if (lacking.status !== 403) wrong.push(`${name} without ${op.scope}: ${lacking.status} ${lacking.body.slice(0, 120)}`);
    }
    expect(wrong).toEqual([]);
  }, 300_000);

  it('an unknown key, a malformed version id and bad query strings answer 401 without a valid key', async () => {
    const restore = await t.rest('POST', `/api/v1/assets/${randomUUID()}/versions/abc/restore`);
    expect(restore.status).toBe(401);
    const bad = await t.rest('GET', '/api/v1/assets?limit=abc', { key: `pk_000000000000_${'A'.repeat(32)}` });
    expect(bad.status).toBe(401);
    const bogusSort = await t.rest('GET', '/api/v1/assets?sort=bogus');
    expect(bogusSort.status).toBe(401);
    // With a key holding the scope, validation answers as before.
    const valid = await t.rest('GET', '/api/v1/assets?limit=abc', { key: anyKey });
    expect(valid.status).toBe(400);
  });
});

/** A value of an input type good enough to pass the router's validation (the scope check comes first). */
function sample(type: GraphQLInputType, depth = 0): unknown {
  if (isNonNullType(type)) return sample(type.ofType, depth);
  if (isListType(type)) return [];
  if (isEnumType(type)) return type.getValues()[0].value;
  if (isInputObjectType(type)) {
    const out: Record<string, unknown> = {};
    for (const f of Object.values(type.getFields())) {
      if (isNonNullType(f.type) && f.defaultValue === undefined && depth < 5) out[f.name] = sample(f.type, depth + 1);
    }
    return out;
  }
  if (isScalarType(type)) {
    switch (type.name) {
      case 'ID':
        return randomUUID();
      case 'Int':
      case 'Float':
        return 1;
      case 'Boolean':
        return true;
      case 'DateTimeISO':
      case 'DateTime':
        return new Date().toISOString();
      case 'String':
        return 'x';
      default:
        return {}; // JSON-like scalars
    }
  }
  return null;
}

function operationFor(kind: 'query' | 'mutation' | 'subscription', field: GraphQLField<unknown, unknown>) {
  const required = field.args.filter((a) => isNonNullType(a.type) && a.defaultValue === undefined);
  const vars = required.map((a) => `$${a.name}: ${a.type.toString()}`).join(', ');
  const args = required.map((a) => `${a.name}: $${a.name}`).join(', ');
  const selection = isCompositeType(getNamedType(field.type)) ? ' { __typename }' : '';
  return {
    query: `${kind}${vars ? `(${vars})` : ''} { ${field.name}${args ? `(${args})` : ''}${selection} }`,
    variables: Object.fromEntries(required.map((a) => [a.name, sample(a.type)])),
  };
}

/** Every root field's declared access, as the kernel decides it (core/subgraph-kit.ts). */
async function declaredAccess(): Promise<Map<string, FieldAccess>> {
  const built = await buildSubgraphs();
  const out = new Map<string, FieldAccess>();
  for (const b of built) {
    for (const op of ['Query', 'Mutation'] as const) {
      const type = op === 'Query' ? b.schema.getQueryType() : b.schema.getMutationType();
      for (const name of Object.keys(type?.getFields() ?? {})) {
        if (name.startsWith('_')) continue;
        out.set(`${op}.${name}`, b.access[`${op}.${name}`]);
      }
    }
  }
  return out;
}

describe('GraphQL: every root field of the supergraph', () => {
  let schema: GraphQLSchema;
  beforeAll(async () => {
    // graphql's own introspection query passes the router's depth limit (development).
    const res = await t.gql<IntrospectionQuery>(getIntrospectionQuery());
    expect(res.errors).toBeUndefined();
    schema = buildClientSchema(res.data!);
  });

  it('every root field declares who may call it, and a REST route running it documents the same scope', async () => {
    const access = await declaredAccess();
    const fields = [
      ...Object.keys(schema.getQueryType()!.getFields()).map((f) => `Query.${f}`),
      ...Object.keys(schema.getMutationType()!.getFields()).map((f) => `Mutation.${f}`),
    ];
    expect(fields.filter((f) => !access.get(f))).toEqual([]);
    expect(fields.filter((f) => access.get(f) === 'public').sort()).toEqual(Object.keys(PUBLIC_FIELDS).sort());
    // Both transports need the same scope: a REST row's documented scope is its fields'.
    const mismatched: string[] = [];
    for (const row of areaRoutes()) {
      for (const def of parse(row.document).definitions) {
        if (def.kind !== 'OperationDefinition') continue;
        const op = def.operation === 'query' ? 'Query' : 'Mutation';
        for (const sel of def.selectionSet.selections) {
          if (sel.kind !== 'Field') continue;
          const rule = access.get(`${op}.${sel.name.value}`);
          const fieldScope = rule === 'public' ? 'public' : typeof rule === 'object' ? rule.scope : 'key';
          const rowScope = row.public ? 'public' : (row.scope ?? 'key');
          if (fieldScope !== rowScope) mismatched.push(`${row.method} ${row.path}: row ${rowScope}, field ${fieldScope}`);
        }
      }
    }
    expect(mismatched).toEqual([]);
    // `rootFieldAccess` refuses a field with no declaration and no area default (default deny).
    expect(() => rootFieldAccess({ name: 'x', resolvers: [class {}] as never }, 'Query', 'y')).toThrow(/declares no scope/);
  });

  it('answers 401 without a key and 403 with a key lacking the field scope (queries and mutations)', async () => {
    const access = await declaredAccess();
    const wrong: string[] = [];
    for (const kind of ['query', 'mutation'] as const) {
      const type = kind === 'query' ? schema.getQueryType()! : schema.getMutationType()!;
      for (const field of Object.values(type.getFields())) {
        const name = `${kind === 'query' ? 'Query' : 'Mutation'}.${field.name}`;
        if (PUBLIC_FIELDS[name]) continue;
        const { query, variables } = operationFor(kind, field);
        const anonymous = await t.gql(query, variables);
        const a = anonymous.errors?.[0]?.extensions;
        if (a?.status !== 401) wrong.push(`${name} without a key: ${JSON.stringify(anonymous.errors?.[0] ?? anonymous.data)}`);
        const rule = access.get(name);
        if (!rule || typeof rule !== 'object') continue;
        const lacking = await t.gql(query, variables, await keyWithout(rule.scope));
        const l = lacking.errors?.[0]?.extensions;
        if (l?.status !== 403)
          wrong.push(`${name} without ${rule.scope}: ${JSON.stringify(lacking.errors?.[0] ?? lacking.data)}`);
      }
    }
    expect(wrong).toEqual([]);
  }, 300_000);

  it('fields one area adds to another area`s type need that area`s read scope (projects { site })', async () => {
    const { key, accountId } = await t.createKey({ role: 'member', scopes: ['identity:read'] });
    await t.platform.services.identity.createProject(accountId, 'scoped');
    const res = await t.gql('{ projects { id site { name } } }', {}, key);
    expect(res.errors?.[0]?.extensions).toMatchObject({ code: 'insufficient_scope', status: 403 });
    expect(res.data?.projects?.[0]?.site ?? null).toBeNull();
  });

  it('every subscription: no key → the connection is refused; a key lacking the scope → 403', async () => {
    const feeds = areaFeeds();
    const ws = buildSchema(subscriptionSdl(feeds));
    const url = t.routerUrl.replace(/^http/, 'ws');
    const run = (key: string | undefined, query: string, variables: Record<string, unknown>) =>
      new Promise<{ code?: number; error?: Record<string, unknown> }>((resolve) => {
        const client = createClient({
          url,
          webSocketImpl: WebSocket,
          connectionParams: key ? { authorization: `Bearer ${key}` } : {},
          retryAttempts: 0,
          lazy: true,
          on: { closed: (e) => resolve({ code: (e as { code: number }).code }) },
        });
        client.subscribe(
          { query, variables },
          {
            // A refusal at subscribe time arrives as one result with errors, then completion.
            next: (r) => {
              if (r.errors?.length) resolve({ error: r.errors[0].extensions as Record<string, unknown> });
            },
            error: (e) => {
              const first = Array.isArray(e) ? e[0] : undefined;
              if (first) resolve({ error: first.extensions });
              void client.dispose();
            },
            complete: () => void client.dispose(),
          },
        );
      });
    const wrong: string[] = [];
    for (const field of Object.values(ws.getSubscriptionType()!.getFields())) {
      const feed = feeds.find((f) => f.field === field.name)!;
      expect(feed.scope).toBeTruthy();
      const { query, variables } = operationFor('subscription', field);
      const anonymous = await run(undefined, query, variables);
      if (anonymous.code !== 4403) wrong.push(`${field.name} without a key: ${JSON.stringify(anonymous)}`);
      const lacking = await run(await keyWithout(feed.scope!), query, variables);
      if (lacking.error?.status !== 403) wrong.push(`${field.name} without ${feed.scope}: ${JSON.stringify(lacking)}`);
    }
    expect(wrong).toEqual([]);
  }, 120_000);
});
