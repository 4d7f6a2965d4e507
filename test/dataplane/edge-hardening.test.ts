import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';
import WebSocket, { WebSocketServer } from 'ws';
import { cookieDomainTooWide, Edge, edgePublicSchemeFromEnv } from '../../dataplane/edge';
import { freePort } from '../../dataplane/supervisor';
import { capnpConfig, workerdBinary } from '../../dataplane/workerd';
import { metricsRegistry } from '../../core/telemetry/metrics';
import { EDGE_ENGINES, edgeWith } from './edge-engines';

/**
 * The edge's part of tenant isolation (docs/decisions/0272-edge-and-egress-hardening.md): cookies for
 * a wider domain are dropped, `/metrics` only for loopback callers, `X-Forwarded-Proto` from
 * configuration, two `Host` headers answer 400; and a storefront's egress.
 */

const COOKIES = [
  'host_only=1; Path=/; HttpOnly',
  'own=2; Domain=foo.sites.localhost; Path=/',
  'own_dot=3; domain=.FOO.sites.localhost',
  'parent=4; Domain=sites.localhost; Path=/',
  'top=5; Path=/; Domain=.localhost',
  'other=6; Domain=bar.sites.localhost',
];
const KEPT = [
  'host_only=1; Path=/; HttpOnly',
  'own=2; Domain=foo.sites.localhost; Path=/',
  'own_dot=3; domain=.FOO.sites.localhost',
];
/**
 * What the nginx engine passes instead (docs/decisions/0310-nginx-edge-engine.md): nginx cannot drop
 * one cookie of several, so it binds each Domain to the request's host (`proxy_cookie_domain`): no
 * cookie reaches another host either, but the wider ones arrive host-bound, uncounted.
 */
const BOUND = [
  'host_only=1; Path=/; HttpOnly',
  'own=2; Domain=foo.sites.localhost; Path=/',
  'own_dot=3; domain=.foo.sites.localhost',
  'parent=4; Domain=foo.sites.localhost; Path=/',
  'top=5; Path=/; Domain=foo.sites.localhost',
  'other=6; Domain=foo.sites.localhost',
];

/** A workload that sets every cookie above, on plain answers and on a websocket's 101, and echoes what it saw. */
function upstream(): Promise<{ server: http.Server; wss: WebSocketServer; port: number; seenWs: http.IncomingHttpHeaders[] }> {
  const server = http.createServer((req, res) => {
    res.setHeader('set-cookie', COOKIES);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ headers: req.headers }));
  });
  const wss = new WebSocketServer({ server });
  const seenWs: http.IncomingHttpHeaders[] = [];
  wss.on('headers', (headers, req) => {
    seenWs.push(req.headers);
    for (const c of COOKIES) headers.push(`Set-Cookie: ${c}`);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, wss, seenWs, port: (server.address() as AddressInfo).port })),
  );
}

function get(
  port: number,
  host: string,
  path = '/',
  localAddress?: string,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, localAddress, headers: { host }, agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
  });
}

/** Writes `head` as is on a new connection and answers the status line's code. */
function raw(port: number, head: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(head));
    let got = '';
    s.on('data', (c: Buffer) => {
      got += c.toString();
      const m = /^HTTP\/1\.1 (\d{3})/.exec(got);
      if (m) {
        resolve(Number(m[1]));
        s.destroy();
      }
    });
    s.on('error', reject);
    s.on('end', () => resolve(-1));
  });
}

async function dropped(): Promise<number> {
  const m = await metricsRegistry.getSingleMetric('edge_set_cookie_dropped_total')?.get();
  return m?.values[0]?.value ?? 0;
}

/** An address of this machine that is not loopback (a caller from it is not a loopback caller). */
function outsideAddress(): string {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (!a.internal && a.family === 'IPv4') return a.address;
  throw new Error('this test needs a non-loopback IPv4 address on the machine');
}

describe.each(EDGE_ENGINES)('edge hardening (tenant isolation, %s engine)', (engine) => {
  let edge: Edge;
  let up: Awaited<ReturnType<typeof upstream>>;

  beforeAll(async () => {
    up = await upstream();
    edge = await edgeWith(engine, { port: 0 });
    await edge.listen();
    edge.setRoutes({
      'foo.sites.localhost': { target: { host: '127.0.0.1', port: up.port }, state: 'running', owner: 'foo' },
    });
    await edge.settled();
  });
  afterAll(async () => {
    await edge.close();
    up.wss.close();
    up.server.closeAllConnections();
    up.server.close();
  });

  it("tells a cookie for the request's own host from one for a wider domain", () => {
    const host = 'foo.sites.localhost';
    expect(cookieDomainTooWide('a=1', host)).toBe(false);
    expect(cookieDomainTooWide('a=1; Domain=foo.sites.localhost', host)).toBe(false);
    expect(cookieDomainTooWide('a=1; domain=.foo.sites.localhost; Secure', host)).toBe(false);
    expect(cookieDomainTooWide('a=1; Domain=', host)).toBe(false);
    expect(cookieDomainTooWide('a=1; Domain=sites.localhost', host)).toBe(true);
    expect(cookieDomainTooWide('a=1; Path=/; DOMAIN=.localhost', host)).toBe(true);
    // The last Domain wins in a browser: any wider one is enough to drop it.
    expect(cookieDomainTooWide('a=1; Domain=foo.sites.localhost; Domain=sites.localhost', host)).toBe(true);
    // A `Domain` inside the cookie's value is not an attribute.
    expect(cookieDomainTooWide('a=Domain=sites.localhost', host)).toBe(false);
  });

  it("keeps a workload's Set-Cookie from reaching wider than its host (node: dropped and counted; nginx: bound to the host)", async () => {
    const before = await dropped();
    const r = await get(edge.port, `foo.sites.localhost:${edge.port}`);
    expect(r.status).toBe(200);
    expect(r.headers['set-cookie']).toEqual(engine === 'node' ? KEPT : BOUND);
    expect((await dropped()) - before).toBe(engine === 'node' ? 3 : 0);
  });

  it("drops a websocket answer's wider cookies on both engines (the Node side carries every upgrade)", async () => {
    // nginx hands websocket upgrades to the control listener (docs/decisions/0415-websockets-through-the-control-listener.md).
    const before = await dropped();
    const ws = new WebSocket(`ws://127.0.0.1:${edge.port}/`, { headers: { host: 'foo.sites.localhost' } });
    const cookies = await new Promise<string[] | undefined>((resolve, reject) => {
      ws.on('upgrade', (res) => resolve(res.headers['set-cookie']));
      ws.on('error', reject);
    });
    ws.close();
    // The Node side drops the wider three; nginx then binds the rest to the host as it does every cookie.
    expect(cookies).toEqual(engine === 'node' ? KEPT : BOUND.slice(0, KEPT.length));
    expect((await dropped()) - before).toBe(3);
  });

  it('serves /metrics on its own address to loopback callers only', async () => {
    const local = await get(edge.port, `127.0.0.1:${edge.port}`, '/metrics');
    expect(local.status).toBe(200);
    expect(local.body).toMatch(/edge_set_cookie_dropped_total \d+/);
    const from = outsideAddress();
    const remote = await get(edge.port, `127.0.0.1:${edge.port}`, '/metrics', from);
    expect(remote.status).toBe(404);
    expect(remote.body).not.toMatch(/edge_requests_total/);
    expect((await get(edge.port, 'localhost', '/metrics', from)).status).toBe(404);
    // A site's own /metrics path stays the site's.
    expect(JSON.parse((await get(edge.port, 'foo.sites.localhost', '/metrics', from)).body).headers.host).toBe(
      'foo.sites.localhost',
    );
  });

  it('writes X-Forwarded-Proto from EDGE_PUBLIC_SCHEME (http by default), for requests and websockets', async () => {
    expect(edgePublicSchemeFromEnv({})).toBe('http');
    expect(edgePublicSchemeFromEnv({ EDGE_PUBLIC_SCHEME: 'HTTPS' })).toBe('https');
    expect(() => edgePublicSchemeFromEnv({ EDGE_PUBLIC_SCHEME: 'ftp' })).toThrow(/EDGE_PUBLIC_SCHEME must be http or https/);
    const plainSeen = JSON.parse((await get(edge.port, 'foo.sites.localhost')).body).headers;
    expect(plainSeen['x-forwarded-proto']).toBe('http');

    const saved = process.env.EDGE_PUBLIC_SCHEME;
    process.env.EDGE_PUBLIC_SCHEME = 'https';
    const tls = await edgeWith(engine, { port: 0 });
    if (saved === undefined) delete process.env.EDGE_PUBLIC_SCHEME;
    else process.env.EDGE_PUBLIC_SCHEME = saved;
    await tls.listen();
    try {
      tls.setRoutes(edge.table());
      await tls.settled();
      const seen = JSON.parse((await get(tls.port, 'foo.sites.localhost')).body).headers;
      expect(seen['x-forwarded-proto']).toBe('https');
      expect(seen['x-forwarded-port']).toBe('443');
      const ws = new WebSocket(`ws://127.0.0.1:${tls.port}/`, { headers: { host: 'foo.sites.localhost' } });
      await new Promise<void>((resolve, reject) => {
        ws.on('open', () => resolve());
        ws.on('error', reject);
      });
      ws.close();
      expect(up.seenWs.at(-1)?.['x-forwarded-proto']).toBe('wss');
      expect(up.seenWs.at(-1)?.['x-forwarded-port']).toBe('443');
    } finally {
      await tls.close();
    }
  });

  it('answers 400 to a request with two Host headers, plain or upgrade, and serves the same request with one', async () => {
    const one = `GET / HTTP/1.1\r\nHost: foo.sites.localhost\r\nConnection: close\r\n\r\n`;
    expect(await raw(edge.port, one)).toBe(200);
    const two = `GET / HTTP/1.1\r\nHost: foo.sites.localhost\r\nHost: bar.sites.localhost\r\nConnection: close\r\n\r\n`;
    expect(await raw(edge.port, two)).toBe(400);
    const upgrade =
      'GET / HTTP/1.1\r\nHost: foo.sites.localhost\r\nhost: foo.sites.localhost\r\nConnection: Upgrade\r\n' +
      'Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n';
    expect(await raw(edge.port, upgrade)).toBe(400);
  });
});

/** A storefront that reports what its global fetch() and its COMMERCE_PLATFORM binding reach. */
const PROBE = `export default {
  async fetch(request, env) {
    const u = new URL(request.url);
    const attempt = async (f) => {
      try {
        const r = await f();
        return { status: r.status, body: await r.text() };
      } catch (e) {
        return { error: String(e && e.message || e) };
      }
    };
    if (u.pathname === '/binding') return Response.json(await attempt(() => env.COMMERCE_PLATFORM.fetch('http://commerce.invalid/stores/x/meta.json')));
    return Response.json(await attempt(() => fetch(u.searchParams.get('url'))));
  },
};
`;

describe('workerd storefront egress', () => {
  let work: string;
  let workerd: ChildProcess;
  let port: number;
  let target: http.Server;
  let commerce: http.Server;
  let targetPort: number;
  let commerceUrl: string;

  const listen = (handler: http.RequestListener, host: string) =>
    new Promise<{ server: http.Server; port: number }>((resolve) => {
      const server = http.createServer(handler);
      server.listen(0, host, () => resolve({ server, port: (server.address() as AddressInfo).port }));
    });
  const ask = async (p: string) => (await fetch(`http://127.0.0.1:${port}${p}`)).json();

  beforeAll(async () => {
    // A platform-side service on every interface (as with HOST=0.0.0.0) and a loopback commerce stand-in.
    ({ server: target, port: targetPort } = await listen((_q, r) => r.end('reached'), '0.0.0.0'));
    const c = await listen((q, r) => r.end(`commerce ${q.url}`), '127.0.0.1');
    commerce = c.server;
    commerceUrl = `http://127.0.0.1:${c.port}`;
    work = mkdtempSync(path.join(tmpdir(), 'egress-'));
    mkdirSync(path.join(work, 'bundle'));
    writeFileSync(path.join(work, 'bundle', 'index.js'), PROBE);
    port = await freePort();
    const config = capnpConfig({
      modules: ['index.js'],
      entry: 'index.js',
      envNames: [],
      port,
      commercePlatformUrl: commerceUrl,
    });
    writeFileSync(path.join(work, 'config.capnp'), config);
    workerd = spawn(workerdBinary(), ['serve', 'config.capnp'], { cwd: work, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    workerd.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    for (let i = 0; ; i++) {
      const up = await fetch(`http://127.0.0.1:${port}/binding`).then(
        () => true,
        () => false,
      );
      if (up) break;
      if (i > 150 || workerd.exitCode !== null) throw new Error(`workerd did not start: ${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 30_000);
  afterAll(() => {
    workerd?.kill('SIGKILL');
    target?.close();
    commerce?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('names globalOutbound: public addresses only, local and private ranges refused, TLS against the browser CAs', () => {
    const config = capnpConfig({
      modules: ['index.js'],
      entry: 'index.js',
      envNames: [],
      port: 1,
      denyAddresses: ['192.0.2.7/32'],
    });
    expect(config).toMatch(/globalOutbound = "egress"/);
    expect(config).toMatch(
      /\(name = "egress", network = \(allow = \["public"\], deny = \["local", "private", .*"192\.0\.2\.7\/32"\], tlsOptions = \(trustBrowserCas = true\)\)\)/,
    );
    // No commerce platform given: no binding to it.
    expect(config).not.toMatch(/COMMERCE_PLATFORM/);
  });

  it("refuses loopback and this machine's own addresses to fetch(), and reaches a loopback commerce stand-in only through its binding", async () => {
    expect(await ask(`/?url=${encodeURIComponent(`http://127.0.0.1:${targetPort}/`)}`)).toHaveProperty('error');
    expect(await ask(`/?url=${encodeURIComponent(`http://${outsideAddress()}:${targetPort}/`)}`)).toHaveProperty('error');
    expect(await ask(`/?url=${encodeURIComponent(`${commerceUrl}/stores/x/meta.json`)}`)).toHaveProperty('error');
    expect(await ask('/binding')).toEqual({ status: 200, body: 'commerce /stores/x/meta.json' });
  });
});
