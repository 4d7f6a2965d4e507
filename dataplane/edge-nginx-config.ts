import type { EdgeRoute } from './edge-common';
import { LINK_HOST_NGINX, servedByLink } from './edge-nginx-links';

/**
 * The nginx engine's configuration (docs/decisions/0310-nginx-edge-engine.md,
 * docs/decisions/0320-edge-route-links.md). One server on the edge's address routes by `$host`:
 * - a host with a link in `<prefix>/links/` (dataplane/edge-nginx-links.ts) is forwarded to the slot
 *   its link names (`$realpath_root`), whose upstream keeps connections alive; the Node side
 *   re-points links without a reload: every route on a unix socket (sandboxed workloads), and every
 *   route that does not run (its link then names the control folder: the control listener);
 * - a running route on a TCP port (or with a host too long for a link) is in a `map` to an upstream
 *   per distinct target, kept alive; a reload changes it;
 * - the rest (unknown hosts, hosts the config does not know yet) goes to the Node side's control
 *   listener, which answers exactly as the Node engine does (404, 503, `/metrics`, a sleeping route
 *   held while it wakes) or forwards it with the newest table;
 * - a websocket upgrade goes to the control listener whatever its host, which carries it to the
 *   workload and so knows every open websocket: its site does not sleep while one is open
 *   (docs/decisions/0415-websockets-through-the-control-listener.md).
 * nginx writes one JSON access line per request (buffered), which the Node side tails.
 */

export interface NginxEdgeConfigOptions {
  /** The edge's listening address and port. */
  host: string;
  port: number;
  /** nginx's folder (absolute; its working directory, where `links/` and `slots/` are). */
  prefix: string;
  /** How many slot upstreams to declare (`EdgeLinks.slots`; default 64). */
  slots?: number;
  /** The Node side's control listener: its unix socket (absolute, short enough for a socket address). */
  controlSocket: string;
  /** `X-Forwarded-Proto` (and `ws`/`wss` on upgrades). */
  publicScheme: 'http' | 'https';
  /** How long to wait on a workload's reads and writes, in ms. */
  upstreamTimeoutMs: number;
  /** The access log file (absolute). */
  accessLog: string;
  /** nginx's worker processes (default 1). */
  workers?: number;
  /** The user workers run as when nginx starts as root (the platform's own: sandboxed workloads' sockets are its). */
  user?: string;
}

/** The fields of one access line (`log_format edge_json`). */
export interface NginxEdgeAccessLine {
  host: string;
  method: string;
  uri: string;
  status: number;
  /** Seconds, from the first byte read from the client to the last byte sent (ms resolution). */
  duration: number;
  /** `control` when the Node side answered, else `proxied`. */
  kind: string;
  /** The upstream's address(es) ('' when nginx answered alone, e.g. a 400 for two `Host` headers). */
  upstream: string;
  /** The time to the upstream's response head ('-' when none came). */
  upstreamHeaderTime: string;
  remote: string;
}

/**
 * The start of a configuration run in its own folder (`-p PREFIX`): workers, pid and error log in
 * the folder, temp files under `tmp/`, and the `http {` block opened.
 */
export function nginxPreamble(workers: number): string[] {
  return [
    `worker_processes ${workers};`,
    // The maps' regular expressions compiled to machine code (Debian's build has PCRE2's JIT): about
    // 1.5 µs less per proxied request (docs/decisions/0400-edge-cost-per-request.md).
    'pcre_jit on;',
    'pid nginx.pid;',
    'error_log error.log warn;',
    'events { worker_connections 4096; }',
    'http {',
    ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(
      (t) => `  ${t}_temp_path tmp/${t === 'client_body' ? 'body' : t};`,
    ),
  ];
}

/** Host names nginx gets in its map; any other key is left to the control listener (the Node side forwards it). */
const PLAIN_HOST = /^[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?$/;

/** A path written into the configuration (quoted there): no quote, `$`, `;`, braces or white space. */
function confPath(p: string): string {
  if (/[\s;{}'"$\\]/.test(p)) throw new Error(`not a path for nginx's configuration: ${JSON.stringify(p)}`);
  return p;
}

function listenAddress(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

function targetAddress(t: EdgeRoute['target']): string {
  if (t.socketPath) {
    if (/[\s;{}'"]/.test(t.socketPath)) throw new Error(`not a socket path for nginx: ${JSON.stringify(t.socketPath)}`);
    return `unix:${t.socketPath}`;
  }
  return listenAddress(t.host, t.port);
}

/** The whole configuration for `routes` (the edge's table, keys already `hostKey`ed). */
export function renderNginxEdgeConfig(routes: ReadonlyMap<string, EdgeRoute>, o: NginxEdgeConfigOptions): string {
  const upstreams = new Map<string, string>();
  const map: string[] = [];
  for (const [host, route] of routes) {
    if (route.state !== 'running' || !PLAIN_HOST.test(host) || servedByLink(host, route)) continue;
    const address = targetAddress(route.target);
    let name = upstreams.get(address);
    if (!name) upstreams.set(address, (name = `edge_target_${upstreams.size}`));
    map.push(`    ${host} ${name};`);
  }
  const timeout = `${Math.max(1, Math.round(o.upstreamTimeoutMs))}ms`;
  // The map's hash: a bucket holds the longest name (release hosts are 56 bytes; names up to 253), the table every name.
  const longest = Math.max(0, ...[...routes.keys()].map((h) => h.length));
  const bucket = Math.max(64, 2 ** Math.ceil(Math.log2(longest + 32)));
  const hashSize = Math.max(2048, 2 ** Math.ceil(Math.log2(map.length * 2 + 1)));
  const ws = o.publicScheme === 'https' ? 'wss' : 'ws';
  const defaultPort = o.publicScheme === 'https' ? '443' : '80';
  const control = `"unix:${confPath(o.controlSocket)}:"`;
  const lines = [
    ...(o.user ? [`user ${o.user};`] : []),
    ...nginxPreamble(o.workers ?? 1),
    // The edge's own answers are plain text (the workloads' keep theirs).
    '  types { }',
    '  default_type "text/plain; charset=utf-8";',
    '  server_tokens off;',
    // Before any map (nginx fixes them at the first one).
    `  map_hash_bucket_size ${bucket};`,
    `  map_hash_max_size ${hashSize};`,
    '  keepalive_requests 10000;',
    '  keepalive_timeout 75s;',
    '  client_max_body_size 0;',
    // Streamed both ways, as the Node engine does.
    '  proxy_http_version 1.1;',
    '  proxy_buffering off;',
    '  proxy_request_buffering off;',
    `  proxy_read_timeout ${timeout};`,
    `  proxy_send_timeout ${timeout};`,
    '  proxy_next_upstream off;',
    // Clients' forwarding headers are dropped: the edge is the first hop and writes its own.
    '  proxy_set_header Host $http_host;',
    '  proxy_set_header X-Forwarded-For $remote_addr;',
    '  proxy_set_header X-Forwarded-Proto $edge_proto;',
    '  proxy_set_header X-Forwarded-Host $http_host;',
    '  proxy_set_header X-Forwarded-Port $edge_port;',
    ...['Forwarded', 'X-Forwarded-Server', 'X-Forwarded-Prefix', 'X-Forwarded-Ssl', 'X-Forwarded-Scheme'].map(
      (h) => `  proxy_set_header ${h} "";`,
    ),
    '  proxy_set_header Upgrade $http_upgrade;',
    '  proxy_set_header Connection $edge_connection;',
    // A cookie for another domain than the request's host is bound to that host (nginx cannot drop one cookie).
    '  proxy_cookie_domain $host $host;',
    '  proxy_cookie_domain ~.+ $host;',
    '  map $http_upgrade $edge_connection { default upgrade; "" keep-alive; }',
    `  map $http_upgrade $edge_proto { default ${ws}; "" ${o.publicScheme}; }`,
    `  map $http_host $edge_port { default ${defaultPort}; "~:(?<p>[0-9]+)$" $p; }`,
    // The control listener marks its answers (the header goes no further).
    '  map $upstream_http_x_edge_control $edge_kind { "" proxied; default control; }',
    '  proxy_hide_header X-Edge-Control;',
    '  map $host $edge_upstream {',
    '    default "";',
    ...map,
    '  }',
    `  map $host $edge_link { "~${LINK_HOST_NGINX}" $edge_k; default .none; }`,
    '  map $realpath_root $edge_slot { "~/slots/(?<edge_s>[0-9]+)$" edge_slot_$edge_s; default ""; }',
    // The map first (a TCP target, a reload away), then the host's slot, else the control listener.
    '  map "$edge_upstream $edge_slot" $edge_route {',
    '    "~^(?<edge_u>[^ ]+) " $edge_u;',
    '    "~^ (?<edge_v>[^ ]+)$" $edge_v;',
    `    default ${control};`,
    '  }',
    // A websocket upgrade to the control listener, which counts it open (decision 0415); a request
    // without `Upgrade` (the exact key, one hash look-up) or with another upgrade keeps its route.
    '  map $http_upgrade $edge_dest {',
    '    "" $edge_route;',
    `    "~*^websocket$" ${control};`,
    '    default $edge_route;',
    '  }',
    '  log_format edge_json escape=json \'{"host":"$host","method":"$request_method","uri":"$request_uri",' +
      '"status":$status,"duration":$request_time,"kind":"$edge_kind","upstream":"$upstream_addr",' +
      '"upstreamHeaderTime":"$upstream_header_time","remote":"$remote_addr"}\';',
    // Buffered: one write (and one wake-up of the Node side's tail) per 128 KiB or 50 ms, not per request.
    `  access_log ${confPath(o.accessLog)} edge_json buffer=128k flush=50ms;`,
    ...[...upstreams].map(([address, name]) => `  upstream ${name} { server ${address}; keepalive 32; }`),
    // Relative to nginx's folder (its working directory): a unix socket address is at most 108 bytes.
    ...Array.from(
      { length: o.slots ?? 64 },
      (_, n) => `  upstream edge_slot_${n} { server unix:slots/${n}/sock; keepalive 16; keepalive_timeout 10s; }`,
    ),
    '  server {',
    `    listen ${listenAddress(o.host, o.port)} default_server;`,
    // A host without a link resolves `links/.none` (the control folder), not a missing path.
    '    set $edge_root $edge_link;',
    `    if (!-d "${confPath(o.prefix)}/links/$edge_link") { set $edge_root .none; }`,
    '    location / {',
    `      root "${confPath(o.prefix)}/links/$edge_root";`,
    '      proxy_pass http://$edge_dest;',
    '      error_page 502 504 = @unanswered;',
    '    }',
    '    location @unanswered {',
    '      add_header Cache-Control no-store always;',
    '      return 502 "The site is not answering.\\n";',
    '    }',
    '  }',
    '}',
    '',
  ];
  return lines.join('\n');
}

/** One access line, or null for a partial or foreign one. */
export function parseAccessLine(line: string): NginxEdgeAccessLine | null {
  if (!line.startsWith('{') || !line.endsWith('}')) return null;
  try {
    return JSON.parse(line) as NginxEdgeAccessLine;
  } catch {
    return null;
  }
}

/** The Node engine's counter outcome(s) a line of a request nginx answered stands for (none for the control listener's). */
export function outcomesOf(line: NginxEdgeAccessLine): Array<'proxied' | 'upstream_error' | 'bad_request'> {
  if (line.upstream === '' && line.status === 400) return ['bad_request'];
  if (line.kind === 'control') return [];
  if ((line.status === 502 || line.status === 504) && !/\d/.test(line.upstreamHeaderTime)) return ['proxied', 'upstream_error'];
  return ['proxied'];
}
