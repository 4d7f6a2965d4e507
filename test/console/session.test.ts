import Fastify, { type FastifyInstance } from 'fastify';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createHash } from 'node:crypto';
import path from 'node:path';
import {
  buildClientSchema,
  buildSchema,
  getIntrospectionQuery,
  type IntrospectionQuery,
  lexicographicSortSchema,
  printSchema,
} from 'graphql';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { closeListener } from '../../core/http-close';
import { registerConsoleStatic } from '../../rest-bridge/console-static';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { PREFIX, projectPath, runningSite } from '../publisher/support';

let t: TestPlatform;
let origin: string;
beforeAll(async () => {
  t = await startTestPlatform();
  origin = new URL(t.bridgeUrl).origin;
}, 60_000);
afterAll(async () => t?.stop());

interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

async function call(
  method: string,
  path: string,
  o: { cookie?: string; origin?: string | null; body?: unknown } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (o.cookie) headers.cookie = o.cookie;
  const from = o.origin === undefined ? origin : o.origin;
  if (from) headers.origin = from;
  if (o.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${t.bridgeUrl}${path}`, {
    method,
    headers,
    body: o.body === undefined ? undefined : JSON.stringify(o.body),
    redirect: 'manual',
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    /* a page */
  }
  return { status: res.status, body, headers: res.headers };
}

/** Signs in with `key`; returns the `Cookie` header value and the answer. */
async function signIn(key: string): Promise<{ cookie: string; res: Answer }> {
  const res = await call('POST', '/console/api/session', { body: { api_key: key } });
  const set = res.headers.get('set-cookie') ?? '';
  return { cookie: set.split(';')[0], res };
}

const sessions = () => t.platform.conn.collection('console_sessions');

describe('console sessions', () => {
  it('signs in with a good key: 201, the principal, an HttpOnly SameSite=Strict cookie stored only as a hash', async () => {
    const { key, accountId } = await t.createKey({ role: 'member' });
    const { cookie, res } = await signIn(key);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      success: true,
      data: { account_id: accountId, role: 'member', key_id: expect.any(String), scopes: expect.any(Array) },
    });
    const set = res.headers.get('set-cookie')!;
    expect(set).toMatch(/^platform_session=[A-Za-z0-9_-]{40,}; /);
    for (const flag of ['HttpOnly', 'SameSite=Strict', 'Path=/', 'Max-Age=43200']) expect(set).toContain(flag);
    expect(set).not.toContain('Secure'); // BASE_URL is http here
    const sessionId = cookie.split('=')[1];

    // Neither the key nor the session id is in the sessions collection (nor in any other).
    const stored = JSON.stringify(await sessions().find({}).toArray());
    expect(stored).toMatch(/"sealedKey":"v1\./);
    expect(stored).toContain(createHash('sha256').update(sessionId).digest('hex'));
    // The key is `pk_<hex>_<base64url>`; its secret part may itself hold `_`, so cut after the prefix.
    const secret = key.split('_').slice(2).join('_');
    expect(secret.length).toBe(32);
    for (const { name } of await t.platform.conn.db!.listCollections().toArray()) {
      const all = JSON.stringify(await t.platform.conn.collection(name).find({}).toArray());
      expect(all).not.toContain(secret);
      expect(all).not.toContain(sessionId);
    }

    const me = await call('GET', '/console/api/session', { cookie });
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ account_id: accountId, key_id: res.body.data.key_id });
  });

  it('refuses a wrong key with 401 and the API message, and sets no cookie', async () => {
    const res = await call('POST', '/console/api/session', {
      body: { api_key: 'pk_000000000000_notakeynotakeynotakeynotakeynotak' },
    });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      success: false,
      error: { code: 'unauthenticated', message: 'bearer token missing or invalid', details: {} },
    });
    expect(res.headers.get('set-cookie')).toBeNull();
    expect((await call('GET', '/console/api/session')).status).toBe(401);
  });

  it('acts as the key on REST routes with the cookie, and refuses the cookie from another origin (403)', async () => {
    const { key } = await t.createKey();
    const { cookie } = await signIn(key);
    const ok = await call('GET', `${PREFIX}/runtime-options`, { cookie });
    expect(ok.status).toBe(200);
    expect(ok.body.data.length).toBeGreaterThan(0);

    const cross = await call('GET', `${PREFIX}/runtime-options`, { cookie, origin: 'http://evil.example' });
    expect(cross.status).toBe(403);
    expect(cross.body).toMatchObject({ success: false, error: { code: 'cross_site_request' } });
    const fetchSite = await fetch(`${t.bridgeUrl}${PREFIX}/runtime-options`, {
      headers: { cookie, 'sec-fetch-site': 'cross-site' },
    });
    expect(fetchSite.status).toBe(403);
    // An unsafe method needs a same-origin marker (browsers send Origin); without one the cookie is refused.
    const bare = await call('POST', `${PREFIX}/sites`, { cookie, origin: null, body: { name: 'No origin' } });
    expect(bare.status).toBe(403);
    // Without the cookie a request is anonymous as ever.
    expect((await call('GET', `${PREFIX}/runtime-options`)).status).toBe(401);
  });

  it('signing out ends the session on the server: the old cookie answers 401', async () => {
    const { key } = await t.createKey();
    const { cookie } = await signIn(key);
    const before = await sessions().countDocuments({});
    const out = await call('DELETE', '/console/api/session', { cookie });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(/^platform_session=; .*Max-Age=0/);
    expect(await sessions().countDocuments({})).toBe(before - 1);
    expect((await call('GET', '/console/api/session', { cookie })).status).toBe(401);
    expect((await call('GET', `${PREFIX}/runtime-options`, { cookie })).status).toBe(401);
  });

  it('a revoked key ends its sessions', async () => {
    const created = await t.platform.services.identity.createApiKey({ accountSlug: `rev-${Date.now()}`, plan: 'pro' });
    const { cookie } = await signIn(created.key);
    const hash = createHash('sha256').update(cookie.split('=')[1]).digest('hex');
    expect((await call('GET', `${PREFIX}/runtime-options`, { cookie })).status).toBe(200);
    await t.platform.services.identity.revokeApiKey(created.keyId);
    const after = await call('GET', `${PREFIX}/runtime-options`, { cookie });
    expect(after.status).toBe(401);
    expect(after.body).toMatchObject({ error: { code: 'unauthenticated' } });
    expect(await sessions().findOne({ _id: hash as never })).toBeNull();
    expect((await call('GET', '/console/api/session', { cookie })).status).toBe(401);
    expect((await signIn(created.key)).res.status).toBe(401);
  });

  it('runs GraphQL over HTTP as the session key', async () => {
    const { key, accountId } = await t.createKey();
    const project = await t.platform.services.identity.createProject(accountId, 'Console GraphQL');
    const { cookie } = await signIn(key);
    const query = 'query One($id: ID!) { project(id: $id) { id name } } query Other { __typename }';
    const res = await call('POST', '/console/api/graphql', {
      cookie,
      body: { query, variables: { id: project._id }, operationName: 'One' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { project: { id: project._id, name: 'Console GraphQL' } } });
    const anonymous = await call('POST', '/console/api/graphql', { body: { query: '{ __typename }' } });
    expect(anonymous.status).toBe(401);
    const cross = await call('POST', '/console/api/graphql', { cookie, origin: 'http://evil.example', body: { query } });
    expect(cross.status).toBe(403);
  });

  it('relays a graphql-ws subscription through /console/api/graphql with the cookie', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key);
    const { cookie } = await signIn(key);
    const url = `${t.bridgeUrl.replace(/^http/, 'ws')}/console/api/graphql`;

    // From another origin the socket is refused before the router is asked.
    const refused = await new Promise<number>((resolve) => {
      const ws = new WebSocket(url, 'graphql-transport-ws', { headers: { cookie, origin: 'http://evil.example' } });
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => resolve(101));
      ws.on('error', () => undefined);
    });
    expect(refused).toBe(403);

    class CookieSocket extends WebSocket {
      constructor(address: string, protocols?: string | string[]) {
        super(address, protocols, { headers: { cookie, origin } });
      }
    }
    let closedWith: number | undefined;
    const client = createClient({
      url,
      webSocketImpl: CookieSocket,
      retryAttempts: 0,
      on: { closed: (e) => (closedWith = (e as { code: number }).code) },
    });
    const events: any[] = [];
    let connected = false;
    client.on('connected', () => (connected = true));
    const unsubscribe = client.subscribe(
      { query: 'subscription($p: ID!) { operationUpdated(projectId: $p) { id status step } }', variables: { p: projectId } },
      { next: (v) => void events.push((v.data as any).operationUpdated), error: () => undefined, complete: () => undefined },
    );
    try {
      const deadline = Date.now() + 20_000;
      while (!connected) {
        if (Date.now() > deadline) throw new Error('not connected');
        await new Promise((r) => setTimeout(r, 25));
      }
      await new Promise((r) => setTimeout(r, 300));
      const res = await call('POST', projectPath(projectId, '/recovery-points'), { cookie, body: {} });
      expect(res.status).toBe(202);
      const id = res.body.data.operation.id;
      while (!events.some((e) => e.id === id && e.status === 'completed')) {
        if (Date.now() > deadline) throw new Error(`no completed event: ${JSON.stringify(events)}`);
        await new Promise((r) => setTimeout(r, 25));
      }
      // A query over the same socket runs as the key too.
      const q = await new Promise<any>((resolve, reject) => {
        client.subscribe(
          { query: '{ project(id: "' + projectId + '") { id } }' },
          { next: resolve, error: reject, complete: () => undefined },
        );
      });
      expect(q.data.project.id).toBe(projectId);

      // Signing out closes the session's sockets.
      expect((await call('DELETE', '/console/api/session', { cookie })).status).toBe(204);
      while (closedWith === undefined) {
        if (Date.now() > deadline) throw new Error('socket still open after sign-out');
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(closedWith).toBe(4403);
    } finally {
      unsubscribe();
      await client.dispose();
    }
  }, 60_000);

  it('introspection answers query, mutation and subscription types (router and console)', async () => {
    const { key } = await t.createKey();
    const viaRouter = await t.gql<IntrospectionQuery>(getIntrospectionQuery());
    expect(viaRouter.errors).toBeUndefined();
    const schema = viaRouter.data!.__schema;
    expect(schema.queryType.name).toBe('Query');
    expect(schema.mutationType?.name).toBe('Mutation');
    expect(schema.subscriptionType?.name).toBe('Subscription');
    const subscription = schema.types.find((x) => x.name === 'Subscription') as any;
    expect(subscription.fields.map((f: any) => f.name)).toEqual(
      expect.arrayContaining(['operationUpdated', 'operationActivity', 'agentActivity']),
    );
    // schema/ holds that same whole schema for codegen.
    const sorted = (schema: Parameters<typeof lexicographicSortSchema>[0]) => printSchema(lexicographicSortSchema(schema));
    const whole = await t.gql<IntrospectionQuery>(getIntrospectionQuery({ inputValueDeprecation: true, specifiedByUrl: true }));
    const committed = buildSchema(readFileSync(path.join(__dirname, '../../schema/schema.graphql'), 'utf8'));
    expect(sorted(buildClientSchema(whole.data!))).toBe(sorted(committed));
    const { cookie } = await signIn(key);
    const viaConsole = await call('POST', '/console/api/graphql', { cookie, body: { query: getIntrospectionQuery() } });
    expect(viaConsole.body.data.__schema.subscriptionType.name).toBe('Subscription');
  });

  it('serves the console: /console redirects, the page and its history fallback carry a strict CSP', async () => {
    const redirect = await call('GET', '/console');
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get('location')).toBe('/console/');
    for (const path of ['/console/', '/console/sites/some-project']) {
      const page = await call('GET', path);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.body).toMatch(/<title>[^<]*<\/title>/);
      expect(page.headers.get('cache-control')).toBe('no-store');
      const csp = page.headers.get('content-security-policy')!;
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain(`connect-src 'self' ${origin.replace(/^http/, 'ws')}`);
      expect(csp).toContain("frame-ancestors 'none'");
    }
    expect((await call('GET', '/console/assets/missing-0000.js')).status).toBe(404);
    expect((await call('GET', '/console/api/nothing-here')).status).toBe(404);
  });
});

describe("the console's files", () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'console-static-'));
  let app: FastifyInstance;
  let base: string;
  const get = async (url: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}${url}`, { headers });
    return { statusCode: res.status, headers: Object.fromEntries(res.headers), body: await res.text() };
  };
  beforeAll(async () => {
    mkdirSync(path.join(dir, 'assets'));
    writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>Built console</title>');
    writeFileSync(path.join(dir, 'assets', 'index-abc123.js'), 'console.log(1)');
    writeFileSync(path.join(dir, 'favicon.svg'), '<svg/>');
    app = Fastify();
    registerConsoleStatic(app, {
      staticDir: dir,
      baseUrl: () => 'https://console.example',
      cdnUrl: () => 'https://cdn.example/x',
      routerWsUrl: () => undefined,
      sessions: undefined as never,
    });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await closeListener(app);
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves hashed assets immutable, other files by ETag, index.html for the app routes, nothing outside', async () => {
    const js = await get('/console/assets/index-abc123.js');
    expect(js.statusCode).toBe(200);
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(js.body).toBe('console.log(1)');
    const again = await get('/console/assets/index-abc123.js', { 'if-none-match': js.headers.etag });
    expect(again.statusCode).toBe(304);

    const svg = await get('/console/favicon.svg');
    expect(svg.headers['content-type']).toBe('image/svg+xml');
    expect(svg.headers['cache-control']).toBe('no-cache');

    for (const url of ['/console/', '/console/sites/p1', '/console/index.html', '/console/..%2f..%2fpackage.json']) {
      const page = await get(url);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('<title>Built console</title>');
      expect(page.headers['cache-control']).toBe('no-store');
    }
    const csp = (await get('/console/')).headers['content-security-policy'] as string;
    expect(csp).toContain("connect-src 'self' wss://console.example");
    expect(csp).toContain("img-src 'self' data: blob: https://cdn.example");
  });
});
