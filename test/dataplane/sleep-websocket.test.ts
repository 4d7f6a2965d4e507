import http from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { metricsRegistry } from '../../core/telemetry/metrics';
import type { Edge } from '../../dataplane/edge';
import { SleepKeeper } from '../../dataplane/sleep';
import type { SiteHost } from '../../dataplane/sites';
import { freePort } from '../../dataplane/supervisor';
import { EDGE_ENGINES, edgeWith } from './edge-engines';

/**
 * An open websocket keeps its site awake, on both edge engines (docs/decisions/0340-sleep-and-wake.md,
 * docs/decisions/0415-websockets-through-the-control-listener.md): the sleep keeper's sweep skips a
 * site while a websocket through the edge is open, however long it stays quiet, and puts it to
 * sleep once the socket has closed and the idle time has passed. Messages flow both ways through
 * the edge, the workload sees the real client in `X-Forwarded-For`, and the edge counts the
 * upgrade once.
 */

const IDLE_MS = 600;
const host = 'chatty.sites.localhost';
const owner = 'chatty';

/** A workload that greets each websocket, echoes what it gets, and keeps the upgrade's headers. */
function workload(): Promise<{ server: http.Server; wss: WebSocketServer; port: number; seen: http.IncomingHttpHeaders[] }> {
  const server = http.createServer((_req, res) => res.end('page'));
  const wss = new WebSocketServer({ server });
  const seen: http.IncomingHttpHeaders[] = [];
  wss.on('connection', (sock, req) => {
    seen.push(req.headers);
    sock.send('hello from the site');
    sock.on('message', (m) => sock.send(`echo:${m.toString()}`));
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, wss, seen, port: (server.address() as AddressInfo).port })),
  );
}

/**
 * The part of the site host the keeper uses, for one site whose workload runs outside it: a sleep
 * routes it `sleeping` (the real one then stops its process, which would cut the websocket).
 */
function oneSite(edge: Edge): { sites: SiteHost; sleeps: number[] } {
  const startedAt = Date.now();
  const sleeps: number[] = [];
  let asleep = false;
  const sites = {
    isHosted: (id: string) => id === owner,
    setBeforeSpawn: () => undefined,
    requestsUnderWay: async () => null,
    awake: () => (asleep ? [] : [{ siteId: owner, memoryMb: 64, sleeps: true, activeAt: startedAt }]),
    sleep: async (id: string) => {
      if (id !== owner || asleep) return false;
      asleep = true;
      sleeps.push(Date.now());
      edge.setState(owner, 'sleeping');
      return true;
    },
    wake: async () => {
      asleep = false;
      edge.setState(owner, 'running');
    },
    isAsleep: () => asleep,
    busy: () => false,
    memoryOf: () => 64,
  };
  return { sites: sites as unknown as SiteHost, sleeps };
}

/** Opens a websocket to `host` through the edge and answers it with a reader of its next messages. */
async function open(port: number): Promise<{ ws: WebSocket; next: () => Promise<string> }> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/live`, { headers: { host } });
  const inbox: string[] = [];
  const waiting: Array<(m: string) => void> = [];
  ws.on('message', (m) => {
    const text = m.toString();
    const w = waiting.shift();
    if (w) w(text);
    else inbox.push(text);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const next = () => {
    const m = inbox.shift();
    return m !== undefined ? Promise.resolve(m) : new Promise<string>((r) => waiting.push(r));
  };
  return { ws, next };
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const t0 = Date.now();
  while (!(await check())) {
    if (Date.now() - t0 > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function requests(outcome: string): Promise<number> {
  const m = await metricsRegistry.getSingleMetric('edge_requests_total')?.get();
  return m?.values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
}

describe.each(EDGE_ENGINES)('an open websocket keeps its site awake (%s engine)', (engine) => {
  let edge: Edge;
  let up: Awaited<ReturnType<typeof workload>>;
  let keeper: SleepKeeper;
  let site: ReturnType<typeof oneSite>;

  beforeAll(async () => {
    up = await workload();
    edge = await edgeWith(engine, { port: 0 });
    await edge.listen();
    edge.upsert([host], { target: { host: '127.0.0.1', port: up.port }, state: 'running', owner });
    await edge.settled();
    site = oneSite(edge);
    keeper = new SleepKeeper(site.sites, edge, { idleMs: IDLE_MS, memoryMb: null, sweepMs: 100 });
  });
  afterAll(async () => {
    keeper.close();
    await edge.close();
    up.wss.close();
    up.server.closeAllConnections();
    await new Promise((r) => up.server.close(r));
  });

  it('is not put to sleep while a websocket is open, sleeps once it closes and the idle time passes', async () => {
    const proxiedBefore = await requests('proxied');
    const { ws, next } = await open(edge.port);
    expect(await next()).toBe('hello from the site');
    ws.send('first');
    expect(await next()).toBe('echo:first');
    expect(edge.openConnections(owner)).toBe(1);

    // Quiet for four idle times: the sweep (every 100 ms) must skip the site.
    await new Promise((r) => setTimeout(r, 4 * IDLE_MS));
    expect(site.sleeps).toEqual([]);
    expect(edge.route(host)?.state).toBe('running');
    ws.send('still here');
    expect(await next()).toBe('echo:still here');

    const closedAt = Date.now();
    await new Promise<void>((resolve) => {
      ws.once('close', () => resolve());
      ws.close();
    });
    await until(() => site.sleeps.length > 0);
    expect(edge.openConnections(owner)).toBe(0);
    // The close counts as the site's last activity: it sleeps an idle time after it, not at once.
    expect(site.sleeps[0] - closedAt).toBeGreaterThanOrEqual(IDLE_MS - 50);
    expect(edge.route(host)?.state).toBe('sleeping');

    // The workload saw the real client and the edge's forwarding headers.
    expect(up.seen.at(-1)).toMatchObject({
      host,
      'x-forwarded-for': '127.0.0.1',
      'x-forwarded-proto': 'ws',
      'x-forwarded-host': host,
      'x-forwarded-port': '80',
    });
    // Counted once: nginx counts the upgrade from its access line when it ends; the node engine
    // counts no upgrade in edge_requests_total.
    const proxied = engine === 'nginx' ? 1 : 0;
    await until(async () => (await requests('proxied')) - proxiedBefore >= proxied);
    await new Promise((r) => setTimeout(r, 300));
    expect((await requests('proxied')) - proxiedBefore).toBe(proxied);
  });

  it('wakes the site for a websocket once it sleeps, and counts a site that does not answer one upstream error', async () => {
    await until(() => edge.route(host)?.state === 'sleeping');
    const { ws, next } = await open(edge.port);
    expect(await next()).toBe('hello from the site');
    expect(edge.route(host)?.state).toBe('running');
    ws.close();

    const dead = await freePort();
    edge.upsert(['dead.sites.localhost'], { target: { host: '127.0.0.1', port: dead }, state: 'running', owner: 'dead' });
    await edge.settled();
    const before = await requests('upstream_error');
    const failed = await new Promise<number>((resolve) => {
      const w = new WebSocket(`ws://127.0.0.1:${edge.port}/`, { headers: { host: 'dead.sites.localhost' } });
      w.on('unexpected-response', (_req, res) => resolve(res.statusCode!));
      w.on('error', () => resolve(-1));
    });
    // nginx answers its plain-text 502; the node engine closes the connection.
    expect(failed).toBe(engine === 'nginx' ? 502 : -1);
    await until(async () => (await requests('upstream_error')) > before);
    await new Promise((r) => setTimeout(r, 300));
    expect((await requests('upstream_error')) - before).toBe(1);
  });
});
