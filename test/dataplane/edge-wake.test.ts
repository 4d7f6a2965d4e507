import http from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import type { Edge } from '../../dataplane/edge';
import { EDGE_ENGINES, edgeWith } from './edge-engines';

/**
 * The edge's hold for a sleeping route (docs/decisions/0340-sleep-and-wake.md), on both engines:
 * a plain request and a websocket upgrade wait while the waker runs, then reach the woken
 * workload; concurrent ones share the waker's one promise; a wake that fails answers 503.
 */

function workload(): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer((req, res) => res.end(`awake ${req.url}`));
  const wss = new WebSocketServer({ server });
  wss.on('connection', (sock) => sock.on('message', (m) => sock.send(`echo:${m.toString()}`)));
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as AddressInfo).port })),
  );
}

function get(port: number, host: string): Promise<{ status: number; body: string; retryAfter?: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/page', headers: { host }, agent: false }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () =>
          resolve({ status: res.statusCode!, body, retryAfter: res.headers['retry-after'] as string | undefined }),
        );
      })
      .on('error', reject);
  });
}

describe.each(EDGE_ENGINES)('the edge holds requests for a sleeping route (%s engine)', (engine) => {
  let edge: Edge;
  let up: { server: http.Server; port: number };
  const host = 'sleepy.sites.localhost';
  let wakes = 0;
  let failNext = false;

  beforeAll(async () => {
    up = await workload();
    edge = await edgeWith(engine, { port: 0, wakeTimeoutMs: 2_000 });
    await edge.listen();
    // A wake that takes 300 ms, then routes the workload as running (what the site host does).
    edge.setWaker(async (owner) => {
      wakes++;
      await new Promise((r) => setTimeout(r, 300));
      if (failNext) {
        failNext = false;
        throw new Error('did not start');
      }
      edge.setState(owner, 'running');
    });
  });
  afterAll(async () => {
    await edge.close();
    await new Promise((r) => up.server.close(r));
  });

  const sleepRoute = () =>
    edge.upsert([host], { target: { host: '127.0.0.1', port: up.port }, state: 'sleeping', owner: 'site-1' });

  it('answers every held request once the workload is awake', async () => {
    sleepRoute();
    await edge.settled();
    wakes = 0;
    // One waker call per held request; the site host shares one wake among them (sites.ts), so
    // what matters here is that every held request is answered by the woken workload.
    const answers = await Promise.all(Array.from({ length: 5 }, () => get(edge.port, host)));
    expect(answers.map((a) => [a.status, a.body])).toEqual(Array(5).fill([200, 'awake /page']));
    expect(wakes).toBeGreaterThanOrEqual(1);
  });

  it('holds a websocket upgrade and connects it to the woken workload', async () => {
    sleepRoute();
    await edge.settled();
    const ws = new WebSocket(`ws://127.0.0.1:${edge.port}/socket`, { headers: { host } });
    const reply = await new Promise<string>((resolve, reject) => {
      ws.on('open', () => ws.send('hello'));
      ws.on('message', (m) => resolve(m.toString()));
      ws.on('error', reject);
    });
    ws.close();
    expect(reply).toBe('echo:hello');
  });

  it('answers 503 with Retry-After when the wake fails', async () => {
    sleepRoute();
    await edge.settled();
    failNext = true;
    const r = await get(edge.port, host);
    expect(r.status).toBe(503);
    expect(r.retryAfter).toBeDefined();
  });
});
