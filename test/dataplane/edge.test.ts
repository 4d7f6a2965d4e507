import http from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { Edge, edgePortFromEnv, hostKey } from '../../dataplane/edge';
import { freePort } from '../../dataplane/supervisor';
import { EDGE_ENGINES, edgeWith } from './edge-engines';

/** A tiny upstream: echoes what it saw, streams on /stream. */
function upstream(name: string): Promise<{ server: http.Server; port: number; wss: WebSocketServer }> {
  const server = http.createServer((req, res) => {
    if (req.url === '/echo') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      req.pipe(res);
      return;
    }
    if (req.url === '/stream') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first\n');
      setTimeout(() => res.end('last\n'), 400);
      return;
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ name, url: req.url, headers: req.headers }));
  });
  const wss = new WebSocketServer({ server });
  wss.on('connection', (sock) => sock.on('message', (m) => sock.send(`${name}:${m.toString()}`)));
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, wss, port: (server.address() as AddressInfo).port })),
  );
}

/** A GET through the edge with a chosen Host header (fetch would not let us set it). */
function get(
  port: number,
  host: string,
  path = '/',
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string; firstChunkAt: number; endAt: number }> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const req = http.get({ host: '127.0.0.1', port, path, headers: { host, ...headers }, agent: false }, (res) => {
      let body = '';
      let firstChunkAt = -1;
      res.on('data', (c: Buffer) => {
        if (firstChunkAt < 0) firstChunkAt = Date.now() - t0;
        body += c.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body, firstChunkAt, endAt: Date.now() - t0 }));
    });
    req.on('error', reject);
  });
}

describe.each(EDGE_ENGINES)('data plane edge (%s engine)', (engine) => {
  let edge: Edge;
  let a: Awaited<ReturnType<typeof upstream>>;
  let b: Awaited<ReturnType<typeof upstream>>;

  beforeAll(async () => {
    [a, b] = await Promise.all([upstream('a'), upstream('b')]);
    edge = await edgeWith(engine, { port: 0 });
    await edge.listen();
  });
  afterAll(async () => {
    await edge.close();
    for (const u of [a, b]) {
      u.wss.close();
      u.server.closeAllConnections();
      u.server.close();
    }
  });
  beforeEach(async () => {
    edge.setRoutes({
      'a.sites.localhost': { target: { host: '127.0.0.1', port: a.port }, state: 'running', owner: 'site-a' },
      'www.example.test': { target: { host: '127.0.0.1', port: a.port }, state: 'running', owner: 'site-a' },
      'b.sites.localhost': { target: { host: '127.0.0.1', port: b.port }, state: 'running', owner: 'site-b' },
    });
    // The nginx engine serves a change once it has reloaded (the node engine at once).
    await edge.settled();
  });

  it('reads EDGE_PORT, 8082 by default, and normalises host names', () => {
    expect(edgePortFromEnv({})).toBe(8082);
    expect(edgePortFromEnv({ EDGE_PORT: '9000' })).toBe(9000);
    expect(hostKey('A.Sites.LocalHost:8082')).toBe('a.sites.localhost');
    expect(hostKey('example.com.')).toBe('example.com');
    expect(hostKey('[::1]:80')).toBe('[::1]');
  });

  it('routes by Host, keeps the Host the client asked for and writes X-Forwarded-* itself', async () => {
    const ra = await get(edge.port, `a.sites.localhost:${edge.port}`, '/hello?x=1', { 'x-forwarded-for': '6.6.6.6' });
    const rb = await get(edge.port, 'B.SITES.LOCALHOST');
    const rc = await get(edge.port, 'www.example.test');
    expect(ra.status).toBe(200);
    const seen = JSON.parse(ra.body);
    expect(seen).toMatchObject({ name: 'a', url: '/hello?x=1' });
    expect(seen.headers.host).toBe(`a.sites.localhost:${edge.port}`);
    expect(seen.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(seen.headers['x-forwarded-proto']).toBe('http');
    expect(seen.headers['x-forwarded-host']).toBe(`a.sites.localhost:${edge.port}`);
    expect(JSON.parse(rb.body).name).toBe('b');
    expect(JSON.parse(rc.body).name).toBe('a');
  });

  it("keeps its connection to the site alive whatever the client's Connection header says, and streams request bodies", async () => {
    let opened = 0;
    const count = () => (opened += 1);
    a.server.on('connection', count);
    try {
      // `agent: false`: each client request says `Connection: close` and gets a connection of its own.
      const seen = [];
      for (let i = 0; i < 3; i++) seen.push(JSON.parse((await get(edge.port, 'a.sites.localhost', `/n${i}`)).body));
      expect(seen.map((s) => s.headers.connection)).toEqual(['keep-alive', 'keep-alive', 'keep-alive']);
      expect(opened).toBeLessThanOrEqual(1); // one, or none when the previous test left one open
    } finally {
      a.server.off('connection', count);
    }
    const body = Buffer.alloc(300_000, 'x');
    const echoed = await new Promise<{ status: number; length: number }>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port: edge.port, method: 'POST', path: '/echo', headers: { host: 'a.sites.localhost' } },
        (res) => {
          let length = 0;
          res.on('data', (c: Buffer) => (length += c.length));
          res.on('end', () => resolve({ status: res.statusCode!, length }));
        },
      );
      req.on('error', reject);
      req.write(body.subarray(0, 1000));
      setTimeout(() => req.end(body.subarray(1000)), 50);
    });
    expect(echoed).toEqual({ status: 200, length: body.length });
  });

  it('answers 404 with a short plain-text body for an unknown host', async () => {
    const r = await get(edge.port, 'nobody.sites.localhost');
    expect(r.status).toBe(404);
    expect(r.headers['content-type']).toMatch(/^text\/plain/);
    expect(r.body.length).toBeLessThan(100);
  });

  it('answers 503 for a stopped or restoring site, and serves it again once running', async () => {
    edge.setState('site-a', 'stopped');
    await edge.settled();
    const stopped = await get(edge.port, 'a.sites.localhost');
    expect(stopped.status).toBe(503);
    expect(stopped.body).toMatch(/stopped/);
    expect((await get(edge.port, 'www.example.test')).status).toBe(503);
    expect((await get(edge.port, 'b.sites.localhost')).status).toBe(200);
    edge.setState('site-a', 'restoring');
    await edge.settled();
    expect((await get(edge.port, 'a.sites.localhost')).body).toMatch(/restored/);
    edge.setState('site-a', 'running');
    await edge.settled();
    expect((await get(edge.port, 'a.sites.localhost')).status).toBe(200);
  });

  it('swaps the whole table at once and removes routes by host or owner', async () => {
    edge.setRoutes([['c.sites.localhost', { target: { host: '127.0.0.1', port: b.port }, state: 'running' }]]);
    await edge.settled();
    expect((await get(edge.port, 'a.sites.localhost')).status).toBe(404);
    expect(JSON.parse((await get(edge.port, 'c.sites.localhost')).body).name).toBe('b');
    edge.remove(['c.sites.localhost']);
    await edge.settled();
    expect(edge.table().size).toBe(0);
    edge.upsert(['d.sites.localhost', 'e.sites.localhost'], {
      target: { host: '127.0.0.1', port: a.port },
      state: 'running',
      owner: 'x',
    });
    expect(edge.table().size).toBe(2);
    edge.remove({ owner: 'x' });
    await edge.settled();
    expect(edge.table().size).toBe(0);
  });

  it("serves long host names (a release's address is 56 bytes; nginx's map needs its buckets sized for them)", async () => {
    const long = `${'a'.repeat(200)}.releases.localhost`;
    edge.upsert([long], { target: { host: '127.0.0.1', port: b.port }, state: 'running' });
    await edge.settled();
    expect(JSON.parse((await get(edge.port, long)).body).name).toBe('b');
  });

  it('streams a response as it comes', async () => {
    const r = await get(edge.port, 'a.sites.localhost', '/stream');
    expect(r.body).toBe('first\nlast\n');
    expect(r.firstChunkAt).toBeLessThan(r.endAt - 250);
  });

  it('passes websocket upgrades through to the right site, and refuses them for an unknown or stopped one', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${edge.port}/socket`, { headers: { host: 'b.sites.localhost' } });
    const reply = await new Promise<string>((resolve, reject) => {
      ws.on('open', () => ws.send('ping'));
      ws.on('message', (m) => resolve(m.toString()));
      ws.on('error', reject);
    });
    expect(reply).toBe('b:ping');
    ws.close();
    const refused = (host: string) =>
      new Promise<number>((resolve) => {
        const w = new WebSocket(`ws://127.0.0.1:${edge.port}/`, { headers: { host } });
        w.on('unexpected-response', (_req, res) => resolve(res.statusCode!));
        w.on('error', () => resolve(-1));
      });
    expect(await refused('nobody.sites.localhost')).toBe(404);
    edge.setState('site-b', 'stopped');
    await edge.settled();
    expect(await refused('b.sites.localhost')).toBe(503);
  });

  it('answers 502 when the site does not answer', async () => {
    const dead = await freePort();
    edge.upsert(['dead.sites.localhost'], { target: { host: '127.0.0.1', port: dead }, state: 'running' });
    await edge.settled();
    const r = await get(edge.port, 'dead.sites.localhost');
    expect(r.status).toBe(502);
    expect(r.headers['content-type']).toMatch(/^text\/plain/);
  });

  it('serves its metrics on its own address only', async () => {
    await get(edge.port, 'nobody.sites.localhost');
    const m = await get(edge.port, `127.0.0.1:${edge.port}`, '/metrics');
    expect(m.status).toBe(200);
    expect(m.body).toMatch(/edge_requests_total\{outcome="unknown_host"\} \d+/);
    // A site's own /metrics path is the site's.
    expect(JSON.parse((await get(edge.port, 'a.sites.localhost', '/metrics')).body).url).toBe('/metrics');
  });
});
