/**
 * nginx from the Debian archive as a native edge (infra/nginx.ts, docs/decisions/0260-native-edge-measured.md):
 * installed without root, started unprivileged on a free port, it routes by Host to a local HTTP
 * server with the edge's X-Forwarded-* (the client's own dropped), writes a JSON access line with
 * status and duration per request, answers 404/503 for an unknown/stopped host, switches a host to
 * another upstream on reload, and passes a websocket-style upgrade.
 */
import http from 'node:http';
import type net from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type NginxAccessLine, NginxServer, type NginxRoute, nginxEdgeConfig, readNginxAccessLog } from '../../infra/nginx';

type Seen = { url?: string; headers: http.IncomingHttpHeaders };

function upstream(name: string, seen: Seen[]): http.Server {
  const server = http.createServer((req, res) => {
    seen.push({ url: req.url, headers: req.headers });
    res.writeHead(200, { 'content-type': 'text/plain' }).end(`hello from ${name}`);
  });
  server.on('upgrade', (req, socket: net.Socket) => {
    seen.push({ url: req.url, headers: req.headers });
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n');
    socket.on('data', (d) => socket.write(`${name}:${d.toString()}`));
  });
  return server;
}

const listen = (s: http.Server) =>
  new Promise<number>((resolve) => s.listen(0, '127.0.0.1', () => resolve((s.address() as net.AddressInfo).port)));

function get(port: number, host: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: '/shop?q=1', headers: { host, ...headers }, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The access lines once `ok` holds (nginx writes a line just after it sends the answer, so a client may read first). */
async function logLines(file: string, ok: (lines: NginxAccessLine[]) => boolean): Promise<NginxAccessLine[]> {
  const deadline = Date.now() + 5_000;
  let lines = readNginxAccessLog(file);
  while (!ok(lines) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    lines = readNginxAccessLog(file);
  }
  return lines;
}

const seenA: Seen[] = [];
const seenB: Seen[] = [];
const a = upstream('a', seenA);
const b = upstream('b', seenB);
let portA = 0;
let portB = 0;
let nginx: NginxServer;
const dir = mkdtempSync(path.join(tmpdir(), 'nginx-edge-'));
const routes = (shopPort: number): NginxRoute[] => [
  { host: 'shop.test', upstream: { host: '127.0.0.1', port: shopPort } },
  { host: 'stopped.test' },
];

beforeAll(async () => {
  portA = await listen(a);
  portB = await listen(b);
  nginx = await NginxServer.start(dir, (port) => nginxEdgeConfig({ port, routes: routes(portA) }));
}, 120_000);

afterAll(async () => {
  await nginx?.stop();
  a.close();
  b.close();
  rmSync(dir, { recursive: true, force: true });
});

test('proxies by Host with the edge’s X-Forwarded-* and logs status and duration as JSON', async () => {
  const res = await get(nginx.port, `shop.test:${nginx.port}`, { 'x-forwarded-for': '6.6.6.6', forwarded: 'for=6.6.6.6' });
  expect(res).toEqual({ status: 200, body: 'hello from a' });
  const h = seenA.at(-1)!;
  expect(h.url).toBe('/shop?q=1');
  expect(h.headers['x-forwarded-for']).toBe('127.0.0.1');
  expect(h.headers['x-forwarded-proto']).toBe('http');
  expect(h.headers['x-forwarded-host']).toBe(`shop.test:${nginx.port}`);
  expect(h.headers['x-forwarded-port']).toBe(String(nginx.port));
  expect(h.headers.host).toBe(`shop.test:${nginx.port}`);
  expect(h.headers.forwarded).toBeUndefined();
  // Kept-alive HTTP/1.1 to the upstream: no `Connection: close` from the client's side leaks through.
  expect(h.headers.connection).toBeUndefined();
  const mine = (l: NginxAccessLine) => l.uri === '/shop?q=1' && l.host === 'shop.test';
  const line = (await logLines(nginx.accessLog, (ls) => ls.some(mine))).find(mine);
  expect(line).toMatchObject({ status: 200, method: 'GET', remote: '127.0.0.1' });
  expect(typeof line!.duration).toBe('number');
  expect(line!.duration).toBeGreaterThanOrEqual(0);
});

test('answers 404 for an unknown host and 503 for a stopped one, and logs both', async () => {
  expect((await get(nginx.port, 'nowhere.test')).status).toBe(404);
  expect((await get(nginx.port, 'stopped.test')).status).toBe(503);
  const both = (ls: NginxAccessLine[]) => ls.some((l) => l.status === 404) && ls.some((l) => l.status === 503);
  const statuses = (await logLines(nginx.accessLog, both)).map((l) => `${l.host} ${l.status}`);
  expect(statuses).toEqual(expect.arrayContaining(['nowhere.test 404', 'stopped.test 503']));
});

test('a reload switches the host to its new upstream for new requests', async () => {
  await nginx.reload(nginxEdgeConfig({ port: nginx.port, routes: routes(portB) }));
  expect(await get(nginx.port, 'shop.test')).toEqual({ status: 200, body: 'hello from b' });
});

test('passes a websocket-style upgrade both ways', async () => {
  const socket = await new Promise<net.Socket>((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port: nginx.port,
      path: '/ws',
      headers: { host: 'shop.test', connection: 'Upgrade', upgrade: 'echo' },
    });
    req.on('upgrade', (res, s: net.Socket) => (res.statusCode === 101 ? resolve(s) : reject(new Error(String(res.statusCode)))));
    req.on('response', (res) => reject(new Error(`no upgrade: ${res.statusCode}`)));
    req.on('error', reject);
    req.end();
  });
  const echoed = await new Promise<string>((resolve) => {
    socket.once('data', (d: Buffer) => resolve(d.toString()));
    socket.write('ping');
  });
  socket.destroy();
  expect(echoed).toBe('b:ping');
  expect(seenB.at(-1)!.headers.upgrade).toBe('echo');
});
