import http from 'node:http';
import { isIP, type Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { createProxyServer } from 'http-proxy-3';
import { metricsText } from '../core/telemetry/metrics';
import {
  cookiesDropped,
  counted,
  type EdgeEngineName,
  type EdgeRoute,
  hostKey,
  type RouteState,
  sleepMetrics,
} from './edge-common';
import { chooseEdgeEngine, type EdgeWatcher, NginxEdgeEngine, type NginxEngineOptions } from './edge-nginx';

/**
 * The edge (docs/decisions/0120-data-plane.md; docs/contracts.md, "The data plane"): its own listener that
 * serves hosted workloads by `Host`. The route table is an immutable map swapped whole, so a request
 * sees either the old table or the new one, never half an update. Plain HTTP requests are forwarded
 * by the edge itself on node:http (`forward`, decision 0246: a fifth to a third less CPU per
 * request than http-proxy-3's passes); websocket upgrades stay http-proxy-3's. Either way the edge streams both
 * ways and writes `X-Forwarded-*` itself. An unknown host answers 404, a route whose workload is
 * stopped or being restored answers 503, a workload that does not answer gives 502.
 *
 * That is the `node` engine. With the `nginx` engine (docs/decisions/0310-nginx-edge-engine.md,
 * dataplane/edge-nginx.ts) nginx listens on the edge's address and forwards what the table routes;
 * this class keeps the table, renders it into nginx's configuration on every change, and its node:http
 * server becomes the control listener nginx hands the rest to (unknown hosts, stopped routes,
 * `/metrics`, hosts nginx does not know yet), answering them as the node engine does. nginx also
 * hands it every websocket upgrade, so the edge knows each open websocket and its site stays awake
 * (docs/decisions/0415-websockets-through-the-control-listener.md).
 */

export type { EdgeAccess, EdgeEngineName, EdgeRoute, RouteState } from './edge-common';
export { edgeEngineFromEnv, hostKey } from './edge-common';
export { chooseEdgeEngine, type EdgeEngineChoice } from './edge-nginx';

export interface EdgeOptions {
  /** Listening port (default `EDGE_PORT`, else 8082); 0 picks a free one. */
  port?: number;
  /** Listening address (default 127.0.0.1). */
  host?: string;
  /** How long to wait for a workload's response headers, in ms (default 60 s). */
  upstreamTimeoutMs?: number;
  /** The scheme clients use to reach the edge, sent as `X-Forwarded-Proto` (default `EDGE_PUBLIC_SCHEME`, else http). */
  publicScheme?: 'http' | 'https';
  /**
   * `nginx` needs `nginx` (the binary and its folder). Unset: `EDGE_ENGINE` as `chooseEdgeEngine`
   * resolves it (nginx's folder under the system's temp folder; node where nginx is missing).
   */
  engine?: EdgeEngineName;
  nginx?: NginxEngineOptions;
  /** How long a request for a sleeping workload is held while it wakes, in ms (default `EDGE_WAKE_TIMEOUT_MS`, else 30 s). */
  wakeTimeoutMs?: number;
}

/** `EDGE_WAKE_TIMEOUT_MS`, else 30 s: past it, a request held for a waking workload answers 503 with `Retry-After`. */
export function edgeWakeTimeoutFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.EDGE_WAKE_TIMEOUT_MS;
  if (raw === undefined || raw.trim() === '') return 30_000;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`EDGE_WAKE_TIMEOUT_MS must be a positive integer of ms (got ${JSON.stringify(raw)})`);
  return n;
}

/** Wakes a sleeping workload (its owner's id); settles once it serves (the site host shares one wake among callers). */
export type EdgeWaker = (owner: string) => Promise<void>;

/** `EDGE_PORT`, else 8082. */
export function edgePortFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const n = Number(env.EDGE_PORT);
  return Number.isInteger(n) && n >= 0 && n < 65536 && env.EDGE_PORT !== undefined && env.EDGE_PORT !== '' ? n : 8082;
}

/** `EDGE_PUBLIC_SCHEME` (`http` or `https`; a TLS front ahead of the edge says https), else http. */
export function edgePublicSchemeFromEnv(env: NodeJS.ProcessEnv = process.env): 'http' | 'https' {
  const v = (env.EDGE_PUBLIC_SCHEME ?? '').trim().toLowerCase();
  if (v === '') return 'http';
  if (v === 'http' || v === 'https') return v;
  throw new Error(`EDGE_PUBLIC_SCHEME must be http or https (got ${JSON.stringify(env.EDGE_PUBLIC_SCHEME)})`);
}

function plain(res: http.ServerResponse, status: number, text: string, extra: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...extra });
  res.end(`${text}\n`);
}

function refuseUpgrade(socket: Duplex, status: number, reason: string): void {
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

/** Hop-by-hop headers (RFC 9110, 7.6.1): they describe one connection and are not forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authenticate',
  'proxy-authorization',
]);

/** The port the client asked for (from `Host`), else the default of the scheme; as http-proxy-3 reports it. */
function requestedPort(hostHeader: string | undefined, scheme: 'http' | 'https'): string {
  const m = hostHeader ? /:(\d+)$/.exec(hostHeader) : null;
  return m ? m[1] : scheme === 'https' ? '443' : '80';
}

/** Client-supplied forwarding headers are dropped: the edge is the first hop and writes its own. */
function dropForwarded(req: http.IncomingMessage): void {
  for (const name of Object.keys(req.headers))
    if (name.startsWith('x-forwarded-') || name === 'forwarded') delete req.headers[name];
}

/** The forwarding headers the edge writes, into a request's headers: the client, and the port, scheme and host it asked for. */
function setForwarded(
  into: http.OutgoingHttpHeaders | http.IncomingHttpHeaders,
  host: string | undefined,
  client: string | undefined,
  scheme: 'http' | 'https',
  proto: string,
): void {
  into['x-forwarded-for'] = client ?? '';
  into['x-forwarded-port'] = requestedPort(host, scheme);
  into['x-forwarded-proto'] = proto;
  into['x-forwarded-host'] = host ?? '';
}

/**
 * True when a `Set-Cookie` value has a `Domain` attribute other than `host` itself (a leading dot
 * ignored, as browsers do): such a cookie would reach the parent domain's other hosts, i.e. other
 * tenants. A cookie without `Domain` (host-only) or with `Domain` equal to the host is kept.
 */
export function cookieDomainTooWide(setCookie: string, host: string): boolean {
  for (const attr of setCookie.split(';').slice(1)) {
    const eq = attr.indexOf('=');
    if (eq < 0 || attr.slice(0, eq).trim().toLowerCase() !== 'domain') continue;
    const domain = attr
      .slice(eq + 1)
      .trim()
      .toLowerCase()
      .replace(/^\./, '');
    // An empty Domain is ignored by browsers (RFC 6265, 5.2.3): the cookie stays host-only.
    if (domain !== '' && domain !== host) return true;
  }
  return false;
}

/** A workload's response header the client may see: not hop-by-hop, and no cookie for wider than `host`. */
function passesResponseHeader(name: string, value: string, host: string): boolean {
  const n = name.toLowerCase();
  if (HOP_BY_HOP.has(n)) return false;
  if (n === 'set-cookie' && cookieDomainTooWide(value, host)) {
    cookiesDropped.inc();
    return false;
  }
  return true;
}

/** Loopback callers: 127.0.0.0/8, ::1, and IPv4 loopback mapped into IPv6. */
function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4.startsWith('127.') ? isIP(v4) === 4 : address === '::1';
}

/** More than one `Host` header (Node keeps the first in `req.headers`; a proxy behind could pick another). */
function hasDuplicateHost(req: http.IncomingMessage): boolean {
  let seen = 0;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i].length === 4 && raw[i].toLowerCase() === 'host' && ++seen > 1) return true;
  return false;
}

export class Edge {
  private routes: ReadonlyMap<string, EdgeRoute> = new Map();
  private readonly server: http.Server;
  private readonly proxy;
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 512 });
  private readonly requestedPort: number;
  private readonly upstreamTimeoutMs: number;
  private readonly listenHost: string;
  private readonly publicScheme: 'http' | 'https';
  /** Upgraded (websocket) client connections: the listener no longer tracks them, so close cuts them here. */
  private readonly upgraded = new Set<Duplex>();
  /** The nginx engine, when chosen; the node:http server is then its control listener. */
  private readonly nginx: NginxEdgeEngine | null;
  private readonly wakeTimeoutMs: number;
  private waker: EdgeWaker | null = null;
  /** When each owner's routes last got a request (ms since the epoch), for sleeping the idle ones. */
  private readonly seen = new Map<string, number>();
  /** Open websocket connections by owner (a workload with one open is not idle). */
  private readonly openUpgrades = new Map<string, number>();

  constructor(opts: EdgeOptions = {}) {
    this.requestedPort = opts.port ?? edgePortFromEnv();
    this.listenHost = opts.host ?? '127.0.0.1';
    this.upstreamTimeoutMs = opts.upstreamTimeoutMs ?? 60_000;
    this.publicScheme = opts.publicScheme ?? edgePublicSchemeFromEnv();
    this.wakeTimeoutMs = opts.wakeTimeoutMs ?? edgeWakeTimeoutFromEnv();
    // The edge writes the forwarding headers itself (`onUpgrade`): with nginx in front the client is in
    // nginx's `X-Forwarded-For`, not the control socket's address.
    this.proxy = createProxyServer({
      ws: true,
      agent: this.agent,
      proxyTimeout: this.upstreamTimeoutMs,
    });
    this.proxy.on('error', (_err, _req, res) => {
      // With nginx its access line counts the failed upgrade (nginx answers its 502).
      if (!this.nginx) counted.upstream_error.inc();
      if (res instanceof http.ServerResponse) plain(res, 502, 'The site is not answering.');
      else (res as Socket).destroy();
    });
    // Websocket upgrades (http-proxy-3): the same cookie rule on the answer.
    this.proxy.on('proxyReqWs', (proxyReq, req) => {
      const host = hostKey(req.headers.host);
      const filter = (upRes: http.IncomingMessage): void => {
        const cookies = upRes.headers['set-cookie'];
        if (cookies) upRes.headers['set-cookie'] = cookies.filter((c) => passesResponseHeader('set-cookie', c, host));
      };
      proxyReq.prependListener('upgrade', filter);
      proxyReq.prependListener('response', filter);
    });
    this.server = http.createServer((req, res) => void this.onRequest(req, res));
    this.server.on('upgrade', (req, socket, head) => void this.onUpgrade(req, socket, head));
    const chosen = opts.engine
      ? { engine: opts.engine, nginx: opts.nginx }
      : chooseEdgeEngine({ root: path.join(os.tmpdir(), 'edge-nginx'), port: this.requestedPort });
    if (chosen.engine === 'nginx' && !chosen.nginx) throw new Error('the nginx edge engine needs its binary and folder');
    this.nginx =
      chosen.engine === 'nginx' && chosen.nginx
        ? new NginxEdgeEngine(
            {
              ...chosen.nginx,
              host: this.listenHost,
              publicScheme: this.publicScheme,
              upstreamTimeoutMs: this.upstreamTimeoutMs,
            },
            () => this.routes,
          )
        : null;
  }

  /** Which engine serves the edge's address. */
  get engine(): EdgeEngineName {
    return this.nginx ? 'nginx' : 'node';
  }

  /**
   * Resolves once the engine serves the newest table (at once for node; after nginx's reload for
   * nginx); rejects when nginx refused it (it then serves the table before, the rest through the control listener).
   */
  async settled(): Promise<void> {
    await this.nginx?.settled();
  }

  /** Swaps the table in and tells the engine. */
  private swap(next: ReadonlyMap<string, EdgeRoute>): void {
    this.routes = next;
    this.nginx?.changed();
  }

  /** Replaces the whole route table at once. Keys are host names (any case, with or without port). */
  setRoutes(table: Iterable<[string, EdgeRoute]> | Record<string, EdgeRoute>): void {
    const entries = Symbol.iterator in table ? [...(table as Iterable<[string, EdgeRoute]>)] : Object.entries(table);
    this.swap(new Map(entries.map(([h, r]) => [hostKey(h), Object.freeze({ ...r, target: { ...r.target } })])));
  }

  /** Adds or replaces the routes of `hosts` (copy, then swap). */
  upsert(hosts: string[], route: EdgeRoute): void {
    const next = new Map(this.routes);
    for (const h of hosts) next.set(hostKey(h), Object.freeze({ ...route, target: { ...route.target } }));
    this.swap(next);
  }

  /** Marks every route of `owner` with `state` (a stopped or restoring site answers 503). */
  setState(owner: string, state: RouteState): void {
    const next = new Map(this.routes);
    for (const [h, r] of next) if (r.owner === owner) next.set(h, Object.freeze({ ...r, state }));
    this.swap(next);
  }

  /** Removes the routes of `hosts`, or every route of an owner with `{ owner }`. */
  remove(hosts: string[] | { owner: string }): void {
    const next = new Map(this.routes);
    if (Array.isArray(hosts)) for (const h of hosts) next.delete(hostKey(h));
    else for (const [h, r] of next) if (r.owner === hosts.owner) next.delete(h);
    this.swap(next);
  }

  /**
   * Who wakes a sleeping route's workload (dataplane/sleep.ts). From then on the edge also tells
   * when each owner last got a request (`lastRequestAt`), whichever engine forwarded it.
   */
  setWaker(waker: EdgeWaker): void {
    if (!this.waker) this.nginx?.observe((req) => this.touch(this.routes.get(hostKey(req.headers.host))));
    this.waker = waker;
  }

  /** When `owner`'s routes last got a request through this edge (ms since the epoch), or undefined. */
  lastRequestAt(owner: string): number | undefined {
    return this.seen.get(owner);
  }

  /**
   * Open websocket connections of `owner`: the Node side carries every one, whichever engine serves
   * (nginx hands websocket upgrades to the control listener: docs/decisions/0415-websockets-through-the-control-listener.md).
   */
  openConnections(owner: string): number {
    return this.openUpgrades.get(owner) ?? 0;
  }

  /** Records a request for its owner; nothing until a waker is set (no one asks `lastRequestAt` before). */
  private touch(route: EdgeRoute | undefined): void {
    if (this.waker && route?.owner) this.seen.set(route.owner, Date.now());
  }

  /**
   * Holds a request for a sleeping route while its workload wakes (one wake for every request that
   * waits: the waker shares it): answers the route once it runs, or null when the wake failed or
   * took longer than the wake timeout.
   */
  private async awake(host: string, route: EdgeRoute): Promise<EdgeRoute | null> {
    if (!this.waker || !route.owner) return null;
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      this.waker(route.owner).then(
        () => 'woke' as const,
        () => 'failed' as const,
      ),
      new Promise<'timed_out'>((r) => {
        timer = setTimeout(() => r('timed_out'), this.wakeTimeoutMs);
      }),
    ]);
    clearTimeout(timer);
    const now = this.routes.get(host);
    const woken = outcome === 'woke' && now?.state === 'running' ? now : null;
    sleepMetrics.held.labels(woken ? 'answered' : outcome === 'woke' ? 'failed' : outcome).inc();
    return woken;
  }

  route(host: string): EdgeRoute | undefined {
    return this.routes.get(hostKey(host));
  }

  /**
   * Lets a watcher see every request the edge receives (it must never answer: access logs, analytics).
   * With nginx it is told from the access line once the answer has ended (`access` has its duration).
   */
  observe(watch: EdgeWatcher): void {
    if (this.nginx) this.nginx.observe(watch);
    else this.server.on('request', watch);
  }

  table(): ReadonlyMap<string, EdgeRoute> {
    return this.routes;
  }

  async listen(): Promise<number> {
    // With nginx the node:http server is the control listener, on a unix socket in nginx's folder.
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      const listening = () => {
        this.server.off('error', reject);
        resolve();
      };
      if (this.nginx) this.server.listen(this.nginx.prepareControl(), listening);
      else this.server.listen(this.requestedPort, this.listenHost, listening);
    });
    if (this.nginx) {
      await this.nginx.start(this.requestedPort, this.server).catch(async (err: unknown) => {
        await new Promise((r) => this.server.close(r));
        throw err;
      });
    }
    return this.port;
  }

  get port(): number {
    if (this.nginx) return this.nginx.port || this.requestedPort;
    const a = this.server.address();
    return a && typeof a === 'object' ? a.port : this.requestedPort;
  }

  /** Stops accepting, lets answers in flight finish for up to `graceMs`, then cuts every connection. */
  async close(graceMs = 2_000): Promise<void> {
    await this.nginx?.stop(graceMs);
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    const timer = setTimeout(() => this.server.closeAllConnections(), graceMs);
    timer.unref();
    for (const s of this.upgraded) s.destroy();
    await closed;
    clearTimeout(timer);
    this.agent.destroy();
  }

  /** The client's address: the socket's, or with nginx in front the one nginx wrote in `X-Forwarded-For`. */
  private clientAddress(req: http.IncomingMessage): string | undefined {
    if (!this.nginx) return req.socket.remoteAddress;
    const fwd = req.headers['x-forwarded-for'];
    return typeof fwd === 'string' ? fwd : req.socket.remoteAddress;
  }

  private async onRequest(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (hasDuplicateHost(req)) {
      counted.bad_request.inc();
      plain(res, 400, 'A request must carry exactly one Host header.', { connection: 'close' });
      return;
    }
    const host = hostKey(req.headers.host);
    let route = this.routes.get(host);
    if (!route) {
      // The edge's own address (no site has an IP literal or `localhost` as its name) serves its
      // metrics, to loopback callers only (docs/decisions/0272-edge-and-egress-hardening.md).
      if (
        req.url === '/metrics' &&
        (isIP(host.replace(/^\[|\]$/g, '')) !== 0 || host === 'localhost') &&
        isLoopback(this.clientAddress(req))
      ) {
        const m = await metricsText();
        res.writeHead(200, { 'content-type': m.contentType });
        res.end(m.body);
        return;
      }
      counted.unknown_host.inc();
      plain(res, 404, 'No site is served at this address.');
      return;
    }
    this.touch(route);
    if (route.state === 'sleeping') route = (await this.awake(host, route)) ?? route;
    if (route.state === 'sleeping') {
      counted.unavailable.inc();
      plain(res, 503, 'This site is waking up; try again in a moment.', { 'retry-after': '5' });
      return;
    }
    if (route.state !== 'running') {
      counted.unavailable.inc();
      const why = route.state === 'restoring' ? 'This site is being restored.' : 'This site is stopped.';
      plain(res, 503, why, { 'retry-after': '30' });
      return;
    }
    counted.proxied.inc();
    this.forward(req, res, route.target);
  }

  /**
   * One request to the workload over a kept-alive connection: the client's headers with the
   * forwarding ones the edge writes (and no hop-by-hop ones), the body streamed both ways. The
   * workload's headers go out in one `writeHead` with the status, so the head leaves with the first
   * body chunk (a small answer is one write to the client).
   */
  private forward(req: http.IncomingMessage, res: http.ServerResponse, target: EdgeRoute['target']): void {
    const raw = req.rawHeaders;
    const headers: http.OutgoingHttpHeaders = {};
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i].toLowerCase();
      if (HOP_BY_HOP.has(name) || name === 'forwarded' || name.startsWith('x-forwarded-')) continue;
      const prev = headers[name];
      headers[name] = prev === undefined ? raw[i + 1] : `${String(prev)}, ${raw[i + 1]}`;
    }
    const te = req.headers['transfer-encoding'];
    if (te !== undefined) headers['transfer-encoding'] = te;
    setForwarded(headers, req.headers.host, this.clientAddress(req), this.publicScheme, this.publicScheme);
    const up = http.request({
      host: target.host,
      port: target.port,
      ...(target.socketPath ? { socketPath: target.socketPath } : {}),
      method: req.method,
      path: req.url,
      headers,
      agent: this.agent,
    });
    up.setTimeout(this.upstreamTimeoutMs, () => up.destroy(new Error('upstream timeout')));
    const failed = (): void => {
      counted.upstream_error.inc();
      plain(res, 502, 'The site is not answering.');
    };
    up.on('error', () => {
      if (!res.writableFinished) failed();
    });
    res.on('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    up.on('response', (upRes) => {
      const out: string[] = [];
      const rh = upRes.rawHeaders;
      const host = hostKey(req.headers.host);
      for (let i = 0; i < rh.length; i += 2) if (passesResponseHeader(rh[i], rh[i + 1], host)) out.push(rh[i], rh[i + 1]);
      res.writeHead(upRes.statusCode ?? 502, upRes.statusMessage, out);
      upRes.on('error', () => res.destroy());
      upRes.pipe(res);
    });
    // A request without a body (most of them) ends at once; one with a body streams.
    if (te === undefined && (req.headers['content-length'] === undefined || req.headers['content-length'] === '0')) {
      up.end();
      req.resume();
    } else {
      req.on('error', () => up.destroy());
      req.pipe(up);
    }
  }

  private async onUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    if (hasDuplicateHost(req)) return refuseUpgrade(socket, 400, 'Bad Request');
    const host = hostKey(req.headers.host);
    let route = this.routes.get(host);
    if (!route) return refuseUpgrade(socket, 404, 'Not Found');
    this.touch(route);
    if (route.state === 'sleeping') route = (await this.awake(host, route)) ?? route;
    if (route.state !== 'running') return refuseUpgrade(socket, 503, 'Service Unavailable');
    if (socket.destroyed) return;
    const client = this.clientAddress(req);
    dropForwarded(req);
    setForwarded(req.headers, req.headers.host, client, this.publicScheme, this.publicScheme === 'https' ? 'wss' : 'ws');
    this.upgraded.add(socket);
    const owner = route.owner;
    if (owner) this.openUpgrades.set(owner, this.openConnections(owner) + 1);
    socket.once('close', () => {
      this.upgraded.delete(socket);
      if (!owner) return;
      const n = this.openConnections(owner) - 1;
      if (n > 0) this.openUpgrades.set(owner, n);
      else this.openUpgrades.delete(owner);
      this.seen.set(owner, Date.now());
    });
    this.proxy.ws(req, socket as Socket, head, { target: { ...route.target } });
  }
}
