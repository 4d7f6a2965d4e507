import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { InfraError, LOCAL_HOST, dataDir, portAnswers, sleep, tail } from './tools';
import { type DebianPackage, installDebianPackages } from './debian';
import { childPids } from '../dataplane/edge-nginx-process';
import { nginxPreamble } from '../dataplane/edge-nginx-config';

/**
 * nginx from the Debian archive, run unprivileged as a native edge in front of local workloads: the
 * measured experiment of docs/decisions/0260-native-edge-measured.md (`NginxServer`, `nginxEdgeConfig`,
 * kept for bench/commerce-edge.ts), and the binary of the edge's nginx engine (`EDGE_ENGINE=nginx`,
 * docs/decisions/0310-nginx-edge-engine.md: the composition root installs it and hands the path to
 * the data plane, whose dataplane/edge-nginx*.ts render, run and tail it). Installed like MariaDB (infra/mariadb.ts): the pinned .deb is fetched,
 * checked against its SHA-256, extracted with `dpkg-deb -x` into <DATA_DIR>/nginx/base once and
 * reused. Only the `nginx` package is needed: it holds the binary with the proxy, map, upstream
 * keep-alive and websocket support built in; the libraries it links (libc, libcrypt, libpcre2-8,
 * libssl3, zlib) are checked with `ldd` after extraction. Each server runs in a folder of its own
 * (`-p PREFIX -c CONF -e ERRLOG`), in the foreground as a child of the caller, on a free port.
 */
export const NGINX_VERSION = '1.22.1-9+deb12u11';

const SECURITY = 'https://deb.debian.org/debian-security/pool/updates/main/n/nginx';
const MAIN = 'https://deb.debian.org/debian/pool/main/n/nginx';
/**
 * bookworm, amd64. Security updates live in the security pool until the next point release copies
 * them into the main pool, so the same file (same SHA-256) is looked for in both, in that order.
 */
export const NGINX_DEBS: DebianPackage[] = [
  {
    urls: [`${SECURITY}/nginx_1.22.1-9%2bdeb12u11_amd64.deb`, `${MAIN}/nginx_1.22.1-9%2bdeb12u11_amd64.deb`],
    sha256: '4e2778e675c07d0f2d8d3b6f5ff84f6483ade1d82c21c910eb9a2787e1cf1b1a',
  },
];

const baseDir = (...p: string[]) => dataDir('nginx', 'base', ...p);
/** The extracted binary. */
export const nginxBinary = () => baseDir('usr', 'sbin', 'nginx');

/** Downloads, verifies and extracts the package into <DATA_DIR>/nginx/base, once. */
export function ensureNginxInstalled(): Promise<{ installed: boolean; ms: number }> {
  return installDebianPackages({
    name: 'nginx',
    label: 'nginx',
    version: NGINX_VERSION,
    dir: baseDir(),
    debs: NGINX_DEBS,
    check: (root) => {
      const ldd = spawnSync('ldd', [path.join(root, 'usr', 'sbin', 'nginx')], { encoding: 'utf8' });
      const missing = (ldd.stdout ?? '')
        .split('\n')
        .filter((l) => l.includes('not found'))
        .map((l) => l.trim().split(' ')[0]);
      if (missing.length)
        throw new InfraError(
          `infra: nginx needs ${missing.join(', ')}, not installed here (Debian: apt-get install libpcre2-8-0 libssl3 zlib1g libcrypt1)`,
        );
    },
  });
}

// ---------------------------------------------------------------------------------------------
// Configuration

/** One host the edge answers: proxied to `upstream`, or 503 while its workload is stopped. */
export interface NginxRoute {
  host: string;
  upstream?: { host: string; port: number } | { socket: string };
}

export interface NginxEdgeOptions {
  port: number;
  routes: NginxRoute[];
  /** The JSON access log (one line per request), relative to the server's folder unless absolute; 'off' for none. */
  accessLog?: string;
  /** Buffer the access log (`buffer=64k flush=1s`) instead of one write per request. */
  bufferAccessLog?: boolean;
  /** Worker processes (1 by default). */
  workers?: number;
  /** Idle kept-alive connections each worker keeps per upstream (`keepalive` in the upstream block; 32). */
  upstreamKeepalive?: number;
}

/** The fields of one access-log line (`log_format edge_json`). */
export interface NginxAccessLine {
  time: string;
  host: string;
  method: string;
  uri: string;
  status: number;
  /** Seconds from the first byte read from the client to the last byte sent (millisecond resolution). */
  duration: number;
  /** The upstream's response time(s) in seconds, as nginx writes them ('' when none was asked). */
  upstreamTime: string;
  bytes: number;
  remote: string;
}

const quoteName = (host: string) => {
  if (!/^[a-z0-9.-]+$/i.test(host)) throw new InfraError(`infra: not a host name for nginx: "${host}"`);
  return host.toLowerCase();
};

/**
 * An nginx.conf for an edge like dataplane/edge.ts: route by Host (an unknown host answers 404, a
 * stopped one 503), client `X-Forwarded-*`/`Forwarded` replaced by the edge's own (For = the
 * client's address, Proto, Host = the Host header, Port = the port in it, else 80), kept-alive
 * HTTP/1.1 upstream connections (`Connection` cleared unless the client asks for an upgrade, so
 * websockets pass), and a JSON access line per request with status and duration.
 */
export function nginxEdgeConfig(o: NginxEdgeOptions): string {
  const keepalive = o.upstreamKeepalive ?? 32;
  const log = o.accessLog ?? 'access.log';
  const lines: string[] = [
    ...nginxPreamble(o.workers ?? 1),
    '  server_tokens off;',
    '  keepalive_requests 100000;',
    '  keepalive_timeout 75s;',
    '  proxy_http_version 1.1;',
    '  proxy_buffering on;',
    '  proxy_read_timeout 3600s;',
    '  proxy_send_timeout 3600s;',
    // Clients' forwarding headers are dropped: the edge is the first hop and writes its own.
    '  proxy_set_header Host $http_host;',
    '  proxy_set_header X-Forwarded-For $remote_addr;',
    '  proxy_set_header X-Forwarded-Proto $scheme;',
    '  proxy_set_header X-Forwarded-Host $http_host;',
    '  proxy_set_header X-Forwarded-Port $edge_forwarded_port;',
    '  proxy_set_header Forwarded "";',
    '  proxy_set_header Upgrade $http_upgrade;',
    '  proxy_set_header Connection $edge_connection;',
    '  map $http_upgrade $edge_connection { default upgrade; "" ""; }',
    '  map $http_host $edge_forwarded_port { default 80; "~:(?<p>[0-9]+)$" $p; }',
    '  log_format edge_json escape=json \'{"time":"$time_iso8601","host":"$host","method":"$request_method","uri":"$request_uri","status":$status,"duration":$request_time,"upstreamTime":"$upstream_response_time","bytes":$bytes_sent,"remote":"$remote_addr"}\';',
    log === 'off' ? '  access_log off;' : `  access_log ${log} edge_json${o.bufferAccessLog ? ' buffer=64k flush=1s' : ''};`,
    `  server { listen ${LOCAL_HOST}:${o.port} default_server; server_name _; return 404; }`,
  ];
  o.routes.forEach((r, i) => {
    const name = quoteName(r.host);
    if (!r.upstream) {
      lines.push(`  server { listen ${LOCAL_HOST}:${o.port}; server_name ${name}; return 503; }`);
      return;
    }
    lines.push(
      `  upstream route_${i} { server ${'socket' in r.upstream ? `unix:${r.upstream.socket}` : `${r.upstream.host}:${r.upstream.port}`}; keepalive ${keepalive}; keepalive_requests 100000; }`,
      `  server { listen ${LOCAL_HOST}:${o.port}; server_name ${name}; location / { proxy_pass http://route_${i}; } }`,
    );
  });
  lines.push('}', '');
  return lines.join('\n');
}

/** Parses the access log's lines (a partial last line is left out). */
export function readNginxAccessLog(file: string): NginxAccessLine[] {
  let text = '';
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((l) => l.startsWith('{') && l.endsWith('}'))
    .map((l) => JSON.parse(l) as NginxAccessLine);
}

// ---------------------------------------------------------------------------------------------
// Running

/** A port no one listens on now (nginx cannot be asked for port 0 and tell which it got). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, LOCAL_HOST, () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** The processes whose parent is `pid` (nginx's workers). */
export { childPids };

/** One nginx master (in the foreground, a child of this process) and its workers, in its own folder. */
export class NginxServer {
  private exit: string | undefined;
  private constructor(
    private readonly child: ChildProcess,
    readonly prefix: string,
    readonly port: number,
  ) {
    child.once('exit', (code, signal) => (this.exit = signal ?? `code ${code}`));
  }

  /** The master's pid. */
  get pid(): number {
    return this.child.pid!;
  }
  get confFile(): string {
    return path.join(this.prefix, 'nginx.conf');
  }
  get errorLog(): string {
    return path.join(this.prefix, 'error.log');
  }
  get accessLog(): string {
    return path.join(this.prefix, 'access.log');
  }
  /** The workers now running (after a reload, old ones may still be draining). */
  workers(): number[] {
    return childPids(this.pid);
  }

  /**
   * Installs nginx if needed and starts it in `prefix` (created) with the config that `config`
   * writes for a free port; waits until the port answers.
   */
  static async start(prefix: string, config: (port: number) => string): Promise<NginxServer> {
    await ensureNginxInstalled();
    for (const d of ['tmp', 'logs']) fs.mkdirSync(path.join(prefix, d), { recursive: true });
    let last = '';
    for (let attempt = 0; attempt < 3; attempt++) {
      const port = await freePort();
      fs.writeFileSync(path.join(prefix, 'nginx.conf'), config(port));
      const child = spawn(
        nginxBinary(),
        ['-p', `${prefix}/`, '-c', 'nginx.conf', '-e', 'error.log', '-g', 'daemon off; master_process on;'],
        { stdio: 'ignore' },
      );
      const server = new NginxServer(child, prefix, port);
      const deadline = Date.now() + 15_000;
      while (Date.now() < deadline && server.exit === undefined) {
        if (await portAnswers(port)) return server;
        await sleep(50);
      }
      last = tail(server.errorLog, 5);
      if (server.exit === undefined) server.kill();
      if (!/in use/.test(last)) break;
    }
    throw new InfraError(`infra: nginx did not start in ${prefix}: ${last}`);
  }

  /**
   * Writes a new config and reloads (SIGHUP): the master checks it, starts new workers that take new
   * connections, and lets the old ones finish their requests. Resolves once a new worker runs and
   * every old one has exited or has stopped accepting (its title then says "shutting down", which
   * nginx sets just before it closes its listening sockets).
   */
  async reload(conf: string): Promise<void> {
    const before = new Set(this.workers());
    fs.writeFileSync(this.confFile, conf);
    this.child.kill('SIGHUP');
    const deadline = Date.now() + 10_000;
    const draining = (pid: number) => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('shutting down');
      } catch {
        return true; // gone
      }
    };
    while (Date.now() < deadline) {
      const now = this.workers();
      if (now.some((p) => !before.has(p)) && now.every((p) => !before.has(p) || draining(p))) {
        await sleep(20);
        return;
      }
      if (this.exit !== undefined) break;
      await sleep(20);
    }
    throw new InfraError(`infra: nginx did not reload: ${tail(this.errorLog, 5)}`);
  }

  /** SIGKILL to the workers and the master (workers outlive a killed master). */
  private kill(): void {
    for (const w of this.workers()) {
      try {
        process.kill(w, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    this.child.kill('SIGKILL');
  }

  /** Stops it (SIGQUIT: graceful, then SIGKILL after `graceMs`). */
  async stop(graceMs = 5_000): Promise<void> {
    if (this.exit !== undefined) return;
    const done = new Promise<void>((r) => this.child.once('exit', () => r()));
    this.child.kill('SIGQUIT');
    const timer = setTimeout(() => this.kill(), graceMs);
    await done;
    clearTimeout(timer);
  }
}
