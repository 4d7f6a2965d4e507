/**
 * The edge's two engines side by side (docs/decisions/0310-nginx-edge-engine.md), each in front of
 * the same workerd storefront (the test fixture, as bench/commerce-edge.ts runs it):
 * - `edge (nginx)`: the Edge with `engine: 'nginx'`: nginx forwards, this process tails its access
 *   log into an `observe` listener (as the release host's analytics do); CPU = nginx's master and
 *   workers + this process's during the round (the tail and the listener);
 * - `edge (node)`: the Edge with `engine: 'node'` and the same listener; CPU = this process's;
 * - `nginx alone`: an nginx with the configuration the nginx engine rendered for the same table, its
 *   access log written but read by no one; CPU = its processes';
 * - `tcp-pipe`: each client connection piped to workerd as bytes in this process (no HTTP): the floor;
 * - `tcp-pipe (twin)`: the same pipe again, so the ratio of the two is the machine's noise on the
 *   ratio figures (two identical forwarders differ only by when they ran).
 * Alternating rounds (workerd's own port first, then the others in a turning order); medians.
 *
 * Then a promotion under load: clients keep requesting the production address through each engine
 * while it is switched between two releases every `BENCH_PROMOTE_MS`; every answer that is not 200
 * and every connection error counts as failed (with the nginx engine, a switch re-points the host's
 * link: docs/decisions/0320-edge-route-links.md; the reloads counted should stay 0).
 *
 * Then Ghost (from the runtime cache, as bench/dataplane-ghost.ts runs it; BENCH_GHOST=0 skips it):
 * its home page straight from its socket, and through each engine, in alternating rounds.
 *
 * Run: `npm run -s build && node dist/bench/edge-engines.js` (BENCH_SECONDS per round, 3; BENCH_ROUNDS,
 * 3; BENCH_CONCURRENCY, 8; BENCH_WARMUP, 300; BENCH_PROMOTE_SECONDS, 5; BENCH_PROMOTE_MS, 250;
 * BENCH_GHOST_ROUNDS, 3). Not part of `npm run bench`.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Edge, type EdgeRoute } from '../dataplane/edge';
import { nginxWorkerUser } from '../dataplane/edge-nginx';
import { renderNginxEdgeConfig } from '../dataplane/edge-nginx-config';
import { EdgeLinks, linkTargets } from '../dataplane/edge-nginx-links';
import { NginxEdgeProcess } from '../dataplane/edge-nginx-process';
import { productionHost, ReleaseHost, releaseHost } from '../dataplane/releases';
import { RuntimeCache } from '../dataplane/runtime-cache';
import { SiteHost } from '../dataplane/sites';
import { endpointOf, freePort, Supervisor } from '../dataplane/supervisor';
import { ensureNginxInstalled, nginxBinary } from '../infra/nginx';
import { findRuntime, runtimeSpec } from '../subgraphs/publisher/runtime-catalog';
import { childrenOf, cpuOf, type Figures, jsonOfScript, loadInProcess, median, selfCpu } from './forwarder-kit';

const FIXTURE = path.resolve(__dirname, '..', '..', 'test', 'fixtures', 'commerce', 'storefront');
const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

type Variant = { name: string; port: number; cpu: () => number };
/** Answers 200, answers with another status, and requests that ended in a connection error. */
type Outcomes = { ok: number; failed: number; errors: number };

/** nginx's CPU so far (master and workers, the ones gone after a reload not counted), in µs. */
const nginxCpu = (pid: number) => () => childrenOf(pid).reduce((s, p) => s + cpuOf(p), cpuOf(pid));

/** Keep-alive clients on `port` as `host` for `seconds`, in a process of their own: answers and failures. */
function failuresUnderLoad(port: number, host: string, concurrency: number, seconds: number): Promise<Outcomes> {
  const script = `const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: ${concurrency} });
let ok = 0, failed = 0, errors = 0; const until = Date.now() + ${seconds * 1000};
const one = () => new Promise((resolve) => {
  const req = http.get({ host: '127.0.0.1', port: ${port}, path: '/', headers: { host: ${JSON.stringify(host)} }, agent }, (res) => {
    res.resume(); res.on('end', () => { if (res.statusCode === 200) ok++; else failed++; resolve(); });
  });
  req.on('error', () => { errors++; resolve(); });
});
const client = async () => { while (Date.now() < until) await one(); };
Promise.all(Array.from({ length: ${concurrency} }, client)).then(() => { process.stdout.write(JSON.stringify({ ok, failed, errors })); agent.destroy(); });`;
  return jsonOfScript<Outcomes>(script);
}

async function main(): Promise<void> {
  const seconds = num('BENCH_SECONDS', 3);
  const rounds = num('BENCH_ROUNDS', 3);
  const concurrency = num('BENCH_CONCURRENCY', 8);
  const warmup = num('BENCH_WARMUP', 300);
  await ensureNginxInstalled();
  const root = mkdtempSync(path.join(tmpdir(), 'bench-edge-engines-'));
  const supervisor = new Supervisor();
  // The releases start and pass their gate through an edge of their own; the engines measured get their routes.
  const gateEdge = new Edge({ port: 0, engine: 'node' });
  const host = new ReleaseHost({ supervisor, edge: gateEdge, releasesRoot: root });
  const engines = {
    node: new Edge({ port: 0, engine: 'node' }),
    nginx: new Edge({
      port: 0,
      engine: 'nginx',
      nginx: { binary: nginxBinary(), prefix: path.join(root, 'edge-nginx'), ephemeral: true },
    }),
  };
  const closers: Array<() => Promise<unknown>> = [];
  try {
    await gateEdge.listen();
    const env = { PUBLIC_STORE_DOMAIN: 'bench.example', SESSION_SECRET: 'bench-session-secret' };
    const ids = ['bench-a', 'bench-b'];
    for (const id of ids) {
      cpSync(FIXTURE, path.join(host.releaseDir(id), 'bundle'), { recursive: true });
      const gate = await host.start({ releaseId: id, projectId: 'bench', kind: 'storefront', env });
      if (!gate.healthy) throw new Error(`release ${id} failed its gate: ${gate.last}`);
    }
    const route = (id: string): EdgeRoute => ({ target: endpointOf(supervisor.status(id)!), state: 'running', owner: id });
    const shop = productionHost('bench');
    const table = new Map<string, EdgeRoute>([
      [releaseHost(ids[0]), route(ids[0])],
      [shop, route(ids[0])],
    ]);
    // Each engine's edge with one listener that counts what it is told (the release host's analytics do more).
    const seen = { node: 0, nginx: 0 };
    for (const [name, edge] of Object.entries(engines) as Array<[keyof typeof engines, Edge]>) {
      edge.observe((_req, res) => res.once('close', () => (seen[name] += 1)));
      await edge.listen();
      edge.setRoutes(table);
      await edge.settled();
      closers.push(() => edge.close());
    }
    // nginx alone, with the configuration and the links the engine writes for the same table.
    const alonePort = await freePort();
    const alonePrefix = path.join(root, 'nginx-alone');
    const nginxEngine = (engines.nginx as unknown as { nginx: { proc: NginxEdgeProcess; controlSocket: string } }).nginx;
    new EdgeLinks(alonePrefix).sync(linkTargets(engines.nginx.table()));
    const alone = await NginxEdgeProcess.start(
      nginxBinary(),
      alonePrefix,
      renderNginxEdgeConfig(engines.nginx.table(), {
        host: '127.0.0.1',
        port: alonePort,
        prefix: alonePrefix,
        controlSocket: nginxEngine.controlSocket, // unknown hosts only; not asked here
        publicScheme: 'http',
        upstreamTimeoutMs: 60_000,
        accessLog: path.join(alonePrefix, 'access.log'),
        user: nginxWorkerUser(),
      }),
      () =>
        new Promise((resolve) => {
          const s = net.connect(alonePort, '127.0.0.1');
          s.once('connect', () => (s.destroy(), resolve(true)));
          s.once('error', () => resolve(false));
        }),
    );
    closers.push(() => alone.stop());
    const target = endpointOf(supervisor.status(ids[0])!);
    // The TCP pipe twice: the second is the same forwarder, so its ratio to the first is the
    // machine's own noise on this figure (what a forwarder's ratio can be trusted to).
    const pipes: net.Server[] = [];
    for (let i = 0; i < 2; i++) {
      const tcp = net.createServer((c) => {
        // A sandboxed release listens on its unix socket only.
        const u = target.socketPath ? net.connect(target.socketPath) : net.connect(target.port, target.host);
        c.pipe(u).pipe(c);
        c.on('error', () => u.destroy());
        u.on('error', () => c.destroy());
      });
      await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
      closers.push(() => new Promise((r) => tcp.close(r)));
      pipes.push(tcp);
    }
    const engineCpu = nginxCpu(nginxEngine.proc.pid);
    const variants: Variant[] = [
      { name: 'edge (nginx engine)', port: engines.nginx.port, cpu: () => engineCpu() + selfCpu() },
      { name: 'edge (node engine)', port: engines.node.port, cpu: selfCpu },
      { name: 'nginx alone', port: alonePort, cpu: nginxCpu(alone.pid) },
      { name: 'tcp-pipe', port: (pipes[0].address() as net.AddressInfo).port, cpu: selfCpu },
      { name: 'tcp-pipe (twin)', port: (pipes[1].address() as net.AddressInfo).port, cpu: selfCpu },
    ];
    const st = supervisor.status(ids[0])!;
    // The launcher, and below it (through the sandbox's bwrap) workerd.
    const tree = (pid: number): number[] => [pid, ...childrenOf(pid).flatMap(tree)];
    const workerdCpu = () => tree(st.pid!).reduce((s, p) => s + cpuOf(p), 0);
    const headers = { host: releaseHost(ids[0]) };
    const rows: Array<{
      d: Figures;
      dWorkerdUs: number;
      v: Record<string, { f: Figures; us: number; selfUs: number; workerdUs: number }>;
    }> = [];
    for (let r = 0; r < rounds; r++) {
      const direct = target.socketPath
        ? { url: 'http://localhost/', headers, socketPath: target.socketPath }
        : { url: `http://${target.host}:${target.port}/`, headers };
      const dw0 = workerdCpu();
      const d = await loadInProcess(direct, concurrency, seconds, warmup);
      const row: (typeof rows)[number] = { d, dWorkerdUs: (workerdCpu() - dw0) / (d.requests + warmup), v: {} };
      for (const v of [...variants.slice(r % variants.length), ...variants.slice(0, r % variants.length)]) {
        const [c0, s0, w0] = [v.cpu(), selfCpu(), workerdCpu()];
        const f = await loadInProcess({ url: `http://127.0.0.1:${v.port}/`, headers }, concurrency, seconds, warmup);
        const n = f.requests + warmup;
        row.v[v.name] = { f, us: (v.cpu() - c0) / n, selfUs: (selfCpu() - s0) / n, workerdUs: (workerdCpu() - w0) / n };
      }
      rows.push(row);
      console.log(
        `round ${r + 1}: workerd's port ${d.rps.toFixed(0)} req/s; ${variants.map((v) => `${v.name} ${row.v[v.name].f.rps.toFixed(0)}`).join('; ')}`,
      );
    }
    const dRps = median(rows.map((x) => x.d.rps));
    console.log(
      `\nmedians of ${rounds} rounds (concurrency ${concurrency}, ${seconds} s, warm-up ${warmup}); indicative only on a shared machine`,
    );
    console.log('| forwarder | req/s | ratio to workerd | forwarder CPU µs/req | workerd µs/req | load generator µs/req |');
    console.log('|---|---|---|---|---|---|');
    console.log(
      `| (workerd's port) | ${dRps.toFixed(0)} | 1 | 0 | ${median(rows.map((x) => x.dWorkerdUs)).toFixed(0)} | ${median(rows.map((x) => x.d.clientUs)).toFixed(0)} |`,
    );
    for (const v of variants) {
      const m = (f: (x: (typeof rows)[number]['v'][string]) => number) => median(rows.map((x) => f(x.v[v.name])));
      console.log(
        `| ${v.name} | ${m((x) => x.f.rps).toFixed(0)} | ${median(rows.map((x) => x.v[v.name].f.rps / x.d.rps)).toFixed(2)} | ${m((x) => x.us).toFixed(0)} | ${m((x) => x.workerdUs).toFixed(0)} | ${m((x) => x.f.clientUs).toFixed(0)} |`,
      );
    }
    const ratio = (a: string, b: string, f: (x: { f: Figures; us: number }) => number) =>
      median(rows.map((x) => f(x.v[a]) / f(x.v[b]))).toFixed(2);
    const engine = 'edge (nginx engine)';
    console.log(
      `${engine}: this process (the access-log tail, the observe listener) ${median(rows.map((x) => x.v[engine].selfUs)).toFixed(0)} µs/req of its ${median(rows.map((x) => x.v[engine].us)).toFixed(0)}; ` +
        `CPU per request / nginx alone ${ratio(engine, 'nginx alone', (x) => x.us)}; req/s / tcp-pipe ${ratio(engine, 'tcp-pipe', (x) => x.f.rps)} (medians of per-round ratios)`,
    );
    const twin = rows.map((x) => x.v['tcp-pipe (twin)'].f.rps / x.v['tcp-pipe'].f.rps).sort((a, b) => a - b);
    console.log(
      `noise: the twin pipe / the pipe, the same forwarder: median ${median(twin).toFixed(2)}, per round ${twin[0].toFixed(2)}–${twin[twin.length - 1].toFixed(2)}`,
    );
    await new Promise((r) => setTimeout(r, 300)); // the last access lines
    console.log(`observe listeners told: node engine ${seen.node}, nginx engine ${seen.nginx} requests`);

    // Promotion under load: the production address switched between the two releases.
    const promoteSeconds = num('BENCH_PROMOTE_SECONDS', 5);
    const everyMs = num('BENCH_PROMOTE_MS', 250);
    console.log(`\npromotion under load (${promoteSeconds} s, concurrency ${concurrency}, a switch every ${everyMs} ms)`);
    console.log('| engine | answered 200 | answered another status | connection errors | switches | nginx reloads |');
    console.log('|---|---|---|---|---|---|');
    for (const [name, edge] of Object.entries(engines)) {
      const reloads0 = nginxEngine.proc.reloads;
      let switches = 0;
      const timer = setInterval(() => {
        switches += 1;
        edge.upsert([shop], route(ids[switches % 2]));
      }, everyMs);
      const r = await failuresUnderLoad(edge.port, shop, concurrency, promoteSeconds).finally(() => clearInterval(timer));
      await edge.settled();
      const reloads = name === 'nginx' ? String(nginxEngine.proc.reloads - reloads0) : '–';
      console.log(`| ${name} | ${r.ok} | ${r.failed} | ${r.errors} | ${switches} | ${reloads} |`);
    }

    if (process.env.BENCH_GHOST !== '0') await ghost(engines, concurrency, seconds, root, closers);
  } finally {
    for (const c of closers) await c().catch(() => undefined);
    await host.close();
    await supervisor.removeAll();
    await gateEdge.close();
    rmSync(root, { recursive: true, force: true });
  }
}

/** A Ghost site from the runtime cache, routed on both engines: its home page direct and through each. */
async function ghost(
  engines: Record<'node' | 'nginx', Edge>,
  concurrency: number,
  seconds: number,
  root: string,
  closers: Array<() => Promise<unknown>>,
): Promise<void> {
  const rounds = num('BENCH_GHOST_ROUNDS', 3);
  const supervisor = new Supervisor();
  closers.unshift(() => supervisor.removeAll());
  const sites = new SiteHost({ cache: new RuntimeCache(), supervisor, edge: engines.nginx, sitesRoot: path.join(root, 'sites') });
  const host = 'ghost-bench.sites.localhost';
  const t0 = Date.now();
  await sites.start({ siteId: 'ghost-bench', runtime: GHOST, url: `http://${host}/`, hosts: [host], memoryMb: 512 });
  engines.node.upsert([host], engines.nginx.route(host)!);
  const st = supervisor.status('ghost-bench')!;
  console.log(
    `\nGhost ${GHOST.version}: started in ${Date.now() - t0} ms (${st.socketPath ? 'sandboxed, on its unix socket' : `on port ${st.port}`})`,
  );
  const headers = { host };
  const direct = st.socketPath
    ? { url: 'http://localhost/', headers, socketPath: st.socketPath }
    : { url: `http://127.0.0.1:${st.port}/`, headers };
  const via = (e: Edge) => ({ url: `http://127.0.0.1:${e.port}/`, headers });
  const ratios: Record<string, number[]> = { nginx: [], node: [] };
  for (let r = 0; r < rounds; r++) {
    const d = await loadInProcess(direct, concurrency, seconds, 20);
    const line = [`round ${r + 1}: direct ${d.rps.toFixed(1)} req/s`];
    for (const name of r % 2 ? (['node', 'nginx'] as const) : (['nginx', 'node'] as const)) {
      const f = await loadInProcess(via(engines[name]), concurrency, seconds, 20);
      ratios[name].push(f.rps / d.rps);
      line.push(`${name} engine ${f.rps.toFixed(1)} (${(f.rps / d.rps).toFixed(2)})`);
    }
    console.log(line.join('; '));
  }
  console.log(
    `Ghost through the edge / direct, medians of ${rounds}: nginx engine ${median(ratios.nginx).toFixed(2)}, node engine ${median(ratios.node).toFixed(2)}`,
  );
}

/** The catalogue's Ghost (the one bench/dataplane-ghost.ts runs, cached under the runtime cache). */
const GHOST = runtimeSpec(findRuntime('5.130.5')!);

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
