/**
 * Commerce releases on the data plane (docs/decisions/0130-commerce-runtime.md,
 * docs/decisions/0246-edge-throughput-options.md): a storefront bundle (the test fixture) in workerd, its
 * deploy-to-healthy time (process start until `GET /` answers 2xx through the edge), and requests
 * per second on its address through the edge against workerd's own port, in the same run.
 *
 * Fairness: both targets get the same load generator (a separate process, so its CPU is not the
 * edge's), the same concurrency, the same warm-up, and alternating short rounds (direct, edge,
 * direct, edge, …) so a change in the machine's load hits both alike; the figures are medians of
 * the rounds. Beside requests per second it reports CPU time per request of the edge process and of
 * workerd (from /proc), which a busy shared machine changes far less than throughput, and which
 * says what bounds the ratio on a machine with few cores.
 *
 * Run: `npm run -s build && node dist/bench/commerce-edge.js` (BENCH_SECONDS per round, 4;
 * BENCH_ROUNDS, 6; BENCH_CONCURRENCY, 8; BENCH_WARMUP requests, 500; BENCH_DEPLOYS, 5). Not part
 * of `npm run bench`.
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { chmodSync, cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createProxyServer } from 'http-proxy-3';
import { Pool } from 'undici';
import { Edge } from '../dataplane/edge';
import { workerdBinary } from '../dataplane/workerd';
import { NginxServer, nginxEdgeConfig, readNginxAccessLog } from '../infra/nginx';
import { ReleaseHost, releaseHost } from '../dataplane/releases';
import { Supervisor } from '../dataplane/supervisor';
import { childrenOf, cpuOf, type Figures, loadInProcess, median, selfCpu } from './forwarder-kit';

const FIXTURE = path.resolve(__dirname, '..', '..', 'test', 'fixtures', 'commerce', 'storefront');
/** A forwarder measured; `cpu` (µs, from /proc) when it is not this process. */
type Variant = { name: string; port: number; cpu?: () => number; workerdCpu?: () => number; log?: string };

const wanted = () =>
  (process.env.BENCH_VARIANTS ?? 'edge,edge-unobserved,http-proxy-3,undici,undici-pipelined,tcp-pipe,nginx').split(',');

/**
 * The other forwarders the edge was compared with (decision 0245), each on a port of its own in
 * this process, so their CPU per request is measured the same way as the edge's:
 * - `http-proxy-3`: what the edge did before (its passes with `xfwd`, one kept-alive agent);
 * - `undici`: an undici `Pool` to workerd (no pipelining), the answer streamed into the response;
 * - `undici-pipelined`: the same over 2 connections with up to 4 requests in flight on each;
 * - `tcp-pipe`: each client connection piped to workerd as bytes (no HTTP in the forwarder, so no
 *   X-Forwarded-*, no per-request status or analytics): the floor of any forwarder in Node.
 * - `nginx` (docs/decisions/0260-native-edge-measured.md): nginx from the Debian archive
 *   (infra/nginx.ts), a process of its own with one worker, routing the release's host to workerd
 *   over kept-alive HTTP/1.1 (`keepalive` upstream, `Connection` cleared), with the edge's
 *   X-Forwarded-* and a JSON access line per request (`buffer=64k flush=1s`). Its CPU (master and
 *   worker) is read from /proc, like workerd's. `nginx-unlogged` is the same without the access log.
 *   `nginx-unix` is `nginx` in front of a second workerd of the same release that listens on a
 *   Unix-domain socket (started by the bench with the release's config.capnp): what loopback TCP
 *   between the forwarder and workerd costs. Its workerd CPU is that second workerd's.
 */
async function startVariants(
  upstream: { host: string; port: number },
  host: string,
  nginxDir: string,
  release: { dir: string; env: Record<string, string> },
): Promise<{
  list: Variant[];
  close(): Promise<void>;
}> {
  const servers: Array<http.Server | net.Server> = [];
  const closers: Array<() => Promise<unknown>> = [];
  const listen = async (name: string, server: http.Server | net.Server) => {
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { name, port: (server.address() as net.AddressInfo).port };
  };
  const dropForwarded = (req: http.IncomingMessage) => {
    for (const n of Object.keys(req.headers)) if (n.startsWith('x-forwarded-') || n === 'forwarded') delete req.headers[n];
  };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 512 });
  closers.push(async () => agent.destroy());
  const proxy = createProxyServer({ xfwd: true, agent, proxyTimeout: 60_000 });
  proxy.on('error', (_e, _req, res) => (res as http.ServerResponse).destroy());
  const httpProxy = http.createServer((req, res) => {
    dropForwarded(req);
    proxy.web(req, res, { target: upstream });
  });
  const viaUndici = (pool: Pool) =>
    http.createServer((req, res) => {
      dropForwarded(req);
      const headers: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && k !== 'connection') headers[k] = v;
      headers['x-forwarded-for'] = req.socket.remoteAddress ?? '';
      headers['x-forwarded-proto'] = 'http';
      headers['x-forwarded-host'] = req.headers.host ?? '';
      pool
        .stream({ path: req.url ?? '/', method: req.method as 'GET', headers, body: req.method === 'GET' ? null : req }, (d) => {
          const out: Record<string, string | string[]> = {};
          for (const [k, v] of Object.entries(d.headers))
            if (v !== undefined && k !== 'connection' && k !== 'transfer-encoding') out[k] = v;
          res.writeHead(d.statusCode, out);
          return res;
        })
        .catch(() => res.destroy());
    });
  const origin = `http://${upstream.host}:${upstream.port}`;
  const pool = new Pool(origin, { pipelining: 1 });
  const pipelined = new Pool(origin, { pipelining: 4, connections: 2 });
  closers.push(
    () => pool.close(),
    () => pipelined.close(),
  );
  const tcp = net.createServer((c) => {
    const u = net.connect(upstream.port, upstream.host);
    c.pipe(u).pipe(c);
    c.on('error', () => u.destroy());
    u.on('error', () => c.destroy());
  });
  const list: Variant[] = [
    await listen('http-proxy-3', httpProxy),
    await listen('undici', viaUndici(pool)),
    await listen('undici-pipelined', viaUndici(pipelined)),
    await listen('tcp-pipe', tcp),
  ];
  if (wanted().includes('nginx')) {
    const nginx = await NginxServer.start(nginxDir, (port) =>
      nginxEdgeConfig({ port, routes: [{ host, upstream }], workers: 1, bufferAccessLog: true }),
    );
    closers.push(() => nginx.stop());
    const nginxCpu = () => nginx.workers().reduce((s, p) => s + cpuOf(p), 0) + cpuOf(nginx.pid);
    list.push({ name: 'nginx', port: nginx.port, cpu: nginxCpu, log: nginx.accessLog });
  }
  if (wanted().includes('nginx-unlogged')) {
    const nginx = await NginxServer.start(`${nginxDir}-unlogged`, (port) =>
      nginxEdgeConfig({ port, routes: [{ host, upstream }], workers: 1, accessLog: 'off' }),
    );
    closers.push(() => nginx.stop());
    const nginxCpu = () => nginx.workers().reduce((s, p) => s + cpuOf(p), 0) + cpuOf(nginx.pid);
    list.push({ name: 'nginx-unlogged', port: nginx.port, cpu: nginxCpu });
  }
  if (wanted().includes('nginx-unix')) {
    // Outside the bench's private (0700) folder and open to all: as root, nginx's workers run as nobody.
    const socket = path.join(tmpdir(), `bench-workerd-${process.pid}.sock`);
    const w = spawn(workerdBinary(), ['serve', 'config.capnp', '--socket-addr', `http=unix:${socket}`], {
      cwd: release.dir,
      env: { ...process.env, ...release.env },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    closers.push(async () => {
      w.kill('SIGTERM');
      await new Promise((r) => (w.exitCode !== null ? r(null) : w.once('exit', r)));
      rmSync(socket, { force: true });
    });
    const answers = () =>
      new Promise<boolean>((resolve) => {
        const c = net.connect(socket);
        c.once('connect', () => (c.destroy(), resolve(true)));
        c.once('error', () => resolve(false));
      });
    for (let i = 0; i < 200 && !(await answers()); i++) await new Promise((r) => setTimeout(r, 50));
    chmodSync(socket, 0o666);
    const nginx = await NginxServer.start(`${nginxDir}-unix`, (port) =>
      nginxEdgeConfig({ port, routes: [{ host, upstream: { socket } }], workers: 1, bufferAccessLog: true }),
    );
    closers.push(() => nginx.stop());
    const nginxCpu = () => nginx.workers().reduce((s, p) => s + cpuOf(p), 0) + cpuOf(nginx.pid);
    list.push({ name: 'nginx-unix', port: nginx.port, cpu: nginxCpu, workerdCpu: () => cpuOf(w.pid!) });
  }
  return {
    list,
    async close() {
      for (const s of servers) {
        if (s instanceof http.Server) s.closeAllConnections();
        s.close();
      }
      for (const c of closers) await c().catch(() => undefined);
    },
  };
}

async function main(): Promise<void> {
  const seconds = Number(process.env.BENCH_SECONDS ?? 4);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 6);
  const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 8);
  const warmup = Number(process.env.BENCH_WARMUP ?? 500);
  const deploys = Number(process.env.BENCH_DEPLOYS ?? 5);
  const supervisor = new Supervisor();
  const edge = new Edge({ port: 0 });
  const root = mkdtempSync(path.join(tmpdir(), 'bench-releases-'));
  const host = new ReleaseHost({ supervisor, edge, releasesRoot: root, onAccess: async () => undefined });
  try {
    await edge.listen();
    const env = { PUBLIC_STORE_DOMAIN: 'bench.example', SESSION_SECRET: 'bench-session-secret' };
    let id = '';
    const gates: number[] = [];
    for (let i = 0; i < deploys; i++) {
      id = `bench-${i}`;
      cpSync(FIXTURE, path.join(host.releaseDir(id), 'bundle'), { recursive: true });
      const gate = await host.start({ releaseId: id, projectId: 'bench', kind: 'storefront', env });
      if (!gate.healthy) throw new Error(`release ${id} failed its gate: ${gate.last}`);
      gates.push(gate.ms);
      if (i < deploys - 1) await host.remove(id);
    }
    console.log(
      `deploy to healthy (process start → GET / 2xx through the edge), ${deploys} deploys: median ${median(gates)} ms, each ${gates.join(', ')} ms`,
    );
    // The production address is the one analytics record: the edge does all of its per-request work.
    host.markHealthy(id);
    host.promote('bench', id);
    const st = supervisor.status(id)!;
    const workerd = childrenOf(st.pid!);
    const workerdCpu = () => workerd.reduce((s, p) => s + cpuOf(p), 0) + cpuOf(st.pid!);
    const headers = { host: `${releaseHost(id)}:${edge.port}` };
    const upstream = { host: '127.0.0.1', port: st.port };
    // The options the edge was measured against, each a listener of this process beside the edge.
    const others = await startVariants(upstream, releaseHost(id), path.join(root, 'nginx'), { dir: host.releaseDir(id), env });
    // The same edge without the analytics recording (no observer on its requests): what that recording costs.
    const unobserved = new Edge({ port: 0 });
    unobserved.setRoutes(edge.table());
    await unobserved.listen();
    others.list.unshift({ name: 'edge-unobserved', port: unobserved.port });
    const closeOthers = others.close;
    others.close = async () => {
      await unobserved.close();
      await closeOthers();
    };
    const all: Variant[] = [{ name: 'edge', port: edge.port }, ...others.list];
    // In the order asked for (each round measures them one after the other).
    const variants = wanted().flatMap((n) => all.filter((v) => v.name === n));
    const rows: Array<{ d: Figures; dWorkerdUs: number; v: Record<string, { f: Figures; edgeUs: number; workerdUs: number }> }> =
      [];
    try {
      for (let r = 0; r < rounds; r++) {
        const dw0 = workerdCpu();
        const d = await loadInProcess({ url: `http://127.0.0.1:${st.port}/`, headers }, concurrency, seconds, warmup);
        const row: (typeof rows)[number] = { d, dWorkerdUs: (workerdCpu() - dw0) / (d.requests + warmup), v: {} };
        // The order turns each round: the first one measured after workerd's port was seen to pay more.
        for (const variant of [...variants.slice(r % variants.length), ...variants.slice(0, r % variants.length)]) {
          const cpu = variant.cpu ?? selfCpu;
          const e0 = cpu();
          const wCpu = variant.workerdCpu ?? workerdCpu;
          const w0 = wCpu();
          const f = await loadInProcess({ url: `http://127.0.0.1:${variant.port}/`, headers }, concurrency, seconds, warmup);
          row.v[variant.name] = {
            f,
            edgeUs: (cpu() - e0) / (f.requests + warmup),
            workerdUs: (wCpu() - w0) / (f.requests + warmup),
          };
        }
        rows.push(row);
        console.log(
          `round ${r + 1}: workerd's port ${d.rps.toFixed(0)} req/s; ${variants
            .map((v) => {
              const x = row.v[v.name];
              return `${v.name} ${x.f.rps.toFixed(0)} req/s (ratio ${(x.f.rps / d.rps).toFixed(2)}, ${x.edgeUs.toFixed(0)} µs)`;
            })
            .join('; ')}`,
        );
      }
    } finally {
      await others.close();
    }
    // A native forwarder's per-request record: every request it served has its access line (flushed on stop).
    for (const v of variants.filter((x) => x.log)) {
      const lines = readNginxAccessLog(v.log!);
      const sent = rows.reduce((s, x) => s + x.v[v.name].f.requests + warmup, 0);
      console.log(
        `${v.name} access log: ${lines.length} JSON lines for ${sent} requests, ${lines.filter((l) => l.status === 200).length} with status 200`,
      );
    }
    const dRps = median(rows.map((x) => x.d.rps));
    console.log(
      `\nmedians of ${rounds} rounds (concurrency ${concurrency}, ${seconds} s, warm-up ${warmup}); workerd's port ${dRps.toFixed(0)} req/s, its CPU per request ${median(rows.map((x) => x.v.edge?.workerdUs ?? 0)).toFixed(0)} µs through the edge`,
    );
    // "CPU-bound ceiling": (C + W) / (C + W + E) with C and W measured through the forwarder (0246).
    // "CPU ratio": all CPU per request on workerd's port over all CPU per request through the
    // forwarder, (C₀ + W₀) / (C + W + E): a hop also makes the load generator and workerd spend more
    // per request (fewer requests per wake-up), which the ceiling leaves out. Where the machine's
    // cores are all this bench's, requests per second follow this ratio.
    console.log(
      '| forwarder | req/s | ratio | forwarder µs/req | workerd µs/req | load generator µs/req | CPU-bound ceiling | CPU ratio |',
    );
    console.log('|---|---|---|---|---|---|---|---|');
    const w0 = median(rows.map((x) => x.dWorkerdUs));
    const c0 = median(rows.map((x) => x.d.clientUs));
    console.log(`| (workerd's port) | ${dRps.toFixed(0)} | 1 | 0 | ${w0.toFixed(0)} | ${c0.toFixed(0)} | 1 | 1 |`);
    for (const v of variants) {
      const e = median(rows.map((x) => x.v[v.name].edgeUs));
      const w = median(rows.map((x) => x.v[v.name].workerdUs));
      const c = median(rows.map((x) => x.v[v.name].f.clientUs));
      console.log(
        `| ${v.name} | ${median(rows.map((x) => x.v[v.name].f.rps)).toFixed(0)} | ${median(rows.map((x) => x.v[v.name].f.rps / x.d.rps)).toFixed(2)} | ${e.toFixed(0)} | ${w.toFixed(0)} | ${c.toFixed(0)} | ${((c + w) / (c + w + e)).toFixed(2)} | ${((c0 + w0) / (c + w + e)).toFixed(2)} |`,
      );
    }
  } finally {
    await host.close();
    await supervisor.removeAll();
    await edge.close();
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
