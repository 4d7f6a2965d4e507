import { spawnSync } from 'node:child_process';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import type http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { dataRoot } from '../core/paths';
import { counted, type EdgeAccess, type EdgeEngineName, edgeEngineFromEnv, type EdgeRoute } from './edge-common';
import { AccessLogTail } from './edge-nginx-access';
import { type NginxEdgeAccessLine, outcomesOf, renderNginxEdgeConfig } from './edge-nginx-config';
import { EdgeLinks, linkTargets } from './edge-nginx-links';
import { NginxEdgeProcess } from './edge-nginx-process';
import { freePort } from './supervisor';

/**
 * The edge's nginx engine (docs/decisions/0310-nginx-edge-engine.md,
 * docs/decisions/0320-edge-route-links.md): nginx is the data path on the edge's address; the Node
 * side (dataplane/edge.ts) owns the route table, re-points each host's link on every change (no
 * reload) and renders what links do not cover (TCP targets) into nginx's configuration (coalesced
 * reloads), answers what nginx hands it on its control socket, and feeds `observe` listeners and the
 * edge's counters from nginx's access lines.
 */

export interface NginxEngineOptions {
  /** The nginx binary (the composition root installs it: infra/nginx.ts). */
  binary: string;
  /** nginx's folder (`<DATA_DIR>/edge-nginx/<port or instance>`): config, pid, logs, temp files. */
  prefix: string;
  /** Worker processes (default 1). */
  workers?: number;
  /** Remove `prefix` on stop (a folder made for one run, e.g. for a port picked at random). */
  ephemeral?: boolean;
}

/** The engine the edge runs with, and the sentence the platform logs about the choice. */
export interface EdgeEngineChoice {
  engine: EdgeEngineName;
  nginx?: NginxEngineOptions;
  note: string;
}

let ephemeralSeq = 0;

const ran = new Map<string, boolean>();
/** True when `binary` runs here (`nginx -v`: present, executable, its libraries found); asked once per binary. */
function runs(binary: string): boolean {
  if (!fs.existsSync(binary)) return false;
  let ok = ran.get(binary);
  if (ok === undefined) ran.set(binary, (ok = spawnSync(binary, ['-v'], { stdio: 'ignore', timeout: 5_000 }).status === 0));
  return ok;
}

/**
 * `EDGE_ENGINE` resolved on this machine: `nginx` (asked for, or by default) when a working binary is
 * found (the one given, which the composition root installs, else `EDGE_NGINX_BINARY`, else
 * `<root>/../nginx/base/usr/sbin/nginx`, else the one installed in the data folder
 * (`<DATA_DIR>/nginx/base/usr/sbin/nginx`), else `nginx` on the PATH), the node engine otherwise (or
 * with `EDGE_ENGINE=node`), the note saying why. nginx's folder is `<root>/<port>`, or a folder of its
 * own run when the port is 0.
 */
export function chooseEdgeEngine(o: { root: string; port: number; binary?: string; env?: NodeJS.ProcessEnv }): EdgeEngineChoice {
  const env = o.env ?? process.env;
  if (edgeEngineFromEnv(env) === 'node') return { engine: 'node', note: 'EDGE_ENGINE=node' };
  const asked = (env.EDGE_ENGINE ?? '').trim() === '' ? 'EDGE_ENGINE unset (nginx by default)' : 'EDGE_ENGINE=nginx';
  const candidates = [
    o.binary,
    env.EDGE_NGINX_BINARY,
    path.join(o.root, '..', 'nginx', 'base', 'usr', 'sbin', 'nginx'),
    path.join(dataRoot(env), 'nginx', 'base', 'usr', 'sbin', 'nginx'),
    ...(env.PATH ?? '')
      .split(':')
      .filter(Boolean)
      .map((d) => path.join(d, 'nginx')),
  ].filter((b): b is string => Boolean(b));
  const binary = candidates.find(runs);
  if (!binary)
    return {
      engine: 'node',
      note: `${asked}, but no working nginx here (looked at ${candidates.slice(0, 4).join(', ')} and the PATH): the node engine serves`,
    };
  const ephemeral = o.port === 0;
  const prefix = path.join(o.root, ephemeral ? `run-${process.pid}-${++ephemeralSeq}` : String(o.port));
  return { engine: 'nginx', nginx: { binary, prefix, ephemeral }, note: `${asked}: ${binary} in ${prefix}` };
}

export type EdgeWatcher = (req: http.IncomingMessage, res: http.ServerResponse, access?: EdgeAccess) => void;

/** True once something accepts TCP connections on `host:port`. */
function answers(host: string, port: number): Promise<boolean> {
  const to = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return new Promise((resolve) => {
    const s = net.connect({ host: to, port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** The user nginx's workers run as when it starts as root: the platform's own, so they reach the workloads' sockets. */
export function nginxWorkerUser(): string | undefined {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  return os.userInfo().username;
}

/** What a watcher written for node:http gets for one access line: the request's Host, and an answer that has closed. */
function shims(line: NginxEdgeAccessLine): { req: http.IncomingMessage; res: http.ServerResponse & EventEmitter } {
  const req = {
    headers: { host: line.host },
    method: line.method,
    url: line.uri,
    socket: { remoteAddress: line.remote },
  } as unknown as http.IncomingMessage;
  const res = Object.assign(new EventEmitter(), {
    statusCode: line.status,
    headersSent: true,
    writableFinished: true,
  }) as unknown as http.ServerResponse & EventEmitter;
  return { req, res };
}

export class NginxEdgeEngine {
  private proc: NginxEdgeProcess | null = null;
  private tail: AccessLogTail | null = null;
  private readonly watchers: EdgeWatcher[] = [];
  private listenPort = 0;

  constructor(
    private readonly o: NginxEngineOptions & {
      host: string;
      publicScheme: 'http' | 'https';
      upstreamTimeoutMs: number;
    },
    private readonly routes: () => ReadonlyMap<string, EdgeRoute>,
  ) {}

  get port(): number {
    return this.listenPort;
  }

  private get accessLog(): string {
    return path.join(this.o.prefix, 'access.log');
  }

  /**
   * The control listener's unix socket: in nginx's folder, or where a socket address fits
   * (108 bytes) when that folder's path is too long.
   */
  get controlSocket(): string {
    if (!this.control) {
      const inPrefix = path.resolve(this.o.prefix, 'control.sock');
      this.control =
        inPrefix.length <= 100 ? inPrefix : path.join(os.tmpdir(), `edge-control-${process.pid}-${++ephemeralSeq}.sock`);
    }
    return this.control;
  }
  private control = '';

  /** nginx's folder made and a stale control socket removed: the control listener may listen. */
  prepareControl(): string {
    fs.mkdirSync(this.o.prefix, { recursive: true });
    fs.rmSync(this.controlSocket, { force: true });
    return this.controlSocket;
  }

  private render(): string {
    return renderNginxEdgeConfig(this.routes(), {
      host: this.o.host,
      port: this.listenPort,
      prefix: path.resolve(this.o.prefix),
      slots: this.links?.slots,
      controlSocket: this.controlSocket,
      publicScheme: this.o.publicScheme,
      upstreamTimeoutMs: this.o.upstreamTimeoutMs,
      accessLog: this.accessLog,
      workers: this.o.workers,
      user: nginxWorkerUser(),
    });
  }

  private links: EdgeLinks | null = null;

  /**
   * Starts nginx on `requestedPort` (0: a free one) in front of `control` (listening on
   * `controlSocket`), whose answers it marks for the access log; answers the port.
   */
  async start(requestedPort: number, control: http.Server): Promise<number> {
    control.prependListener('request', (_req: http.IncomingMessage, res: http.ServerResponse) =>
      res.setHeader('x-edge-control', '1'),
    );
    this.links = new EdgeLinks(path.resolve(this.o.prefix));
    this.links.sync(linkTargets(this.routes()));
    let last: Error | undefined;
    for (let attempt = 0; attempt < 3; attempt++) {
      this.listenPort = requestedPort || (await freePort());
      try {
        this.proc = await NginxEdgeProcess.start(this.o.binary, this.o.prefix, this.render(), () =>
          answers(this.o.host, this.listenPort),
        );
        break;
      } catch (err) {
        last = err as Error;
        // A free port can be taken between the probe and nginx's bind: try another one.
        if (requestedPort !== 0 || !/in use/.test(last.message)) throw last;
      }
    }
    if (!this.proc) throw last ?? new Error('nginx did not start');
    const proc = this.proc;
    this.tail = new AccessLogTail(
      this.accessLog,
      (line) => this.onLine(line),
      () => process.kill(proc.pid, 'SIGUSR1'),
    );
    return this.listenPort;
  }

  /**
   * The table changed: the links change at once (no reload); nginx gets the new configuration, which
   * reloads only when what the links do not cover changed (reloads coalesced).
   */
  changed(): void {
    if (!this.proc) return;
    this.links?.sync(linkTargets(this.routes()));
    this.proc.apply(this.render()).catch((err: Error) => {
      process.emitWarning(`edge (nginx): the route table was not applied: ${err.message}`);
    });
  }

  /** Resolves once nginx serves the newest table. */
  async settled(): Promise<void> {
    await this.proc?.settled();
  }

  observe(watch: EdgeWatcher): void {
    this.watchers.push(watch);
  }

  private onLine(line: NginxEdgeAccessLine): void {
    for (const outcome of outcomesOf(line)) counted[outcome].inc();
    if (this.watchers.length === 0) return;
    const access: EdgeAccess = { host: line.host, status: line.status, ms: line.duration * 1000 };
    for (const watch of this.watchers) {
      const { req, res } = shims(line);
      watch(req, res, access);
      res.emit('close');
    }
  }

  async stop(graceMs: number): Promise<void> {
    await this.proc?.stop(graceMs);
    this.tail?.close();
    this.proc = null;
    this.tail = null;
    this.links = null;
    if (this.o.ephemeral) fs.rmSync(this.o.prefix, { recursive: true, force: true });
  }
}
