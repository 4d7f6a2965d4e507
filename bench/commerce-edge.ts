/**
 * Commerce releases on the data plane (docs/decisions/0130-commerce-runtime.md,
 * docs/benchmarks/commerce-edge.md): a storefront bundle (the test fixture) in workerd, its
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
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Edge } from '../dataplane/edge';
import { ReleaseHost, releaseHost } from '../dataplane/releases';
import { Supervisor } from '../dataplane/supervisor';
import type { LoadFigures, LoadTarget } from './load-stats';

const FIXTURE = path.resolve(__dirname, '..', '..', 'test', 'fixtures', 'commerce', 'storefront');
const TICK_US = 1e6 / 100; // USER_HZ is 100 on Linux

type Figures = LoadFigures & { clientUs: number };

/** The load generator in a process of its own: its CPU (reported per request) is neither the edge's nor workerd's. */
function loadInProcess(target: LoadTarget, concurrency: number, seconds: number, warmup: number): Promise<Figures> {
  const script = `const c0 = process.cpuUsage(); require(${JSON.stringify(path.join(__dirname, 'load-stats'))}).load(${JSON.stringify(target)}, ${concurrency}, ${seconds}, ${warmup}).then((f) => { const u = process.cpuUsage(c0); process.stdout.write(JSON.stringify({ ...f, clientUs: (u.user + u.system) / (f.requests + ${warmup}) })); }, (e) => { console.error(e.message); process.exit(1); });`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as Figures) : reject(new Error(`load exited ${code}`))));
  });
}

/** utime + stime of a process, in µs (0 when it is gone). */
function cpuOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * TICK_US;
  } catch {
    return 0;
  }
}

/** The children of a process (the launcher's child is workerd). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return out;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const selfCpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

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
    const direct = { url: `http://127.0.0.1:${st.port}/`, headers };
    const via = { url: `http://127.0.0.1:${edge.port}/`, headers };
    const rows: Array<{ d: Figures; v: Figures; edgeUs: number; workerdUs: number }> = [];
    for (let r = 0; r < rounds; r++) {
      const d = await loadInProcess(direct, concurrency, seconds, warmup);
      const e0 = selfCpu();
      const w0 = workerdCpu();
      const v = await loadInProcess(via, concurrency, seconds, warmup);
      const edgeUs = (selfCpu() - e0) / (v.requests + warmup);
      const workerdUs = (workerdCpu() - w0) / (v.requests + warmup);
      rows.push({ d, v, edgeUs, workerdUs });
      console.log(
        `round ${r + 1}: workerd's port ${d.rps.toFixed(0)} req/s (p99 ${d.p99.toFixed(1)} ms), edge ${v.rps.toFixed(0)} req/s (p99 ${v.p99.toFixed(1)} ms), ratio ${(v.rps / d.rps).toFixed(2)}; CPU per request: edge ${edgeUs.toFixed(0)} µs, workerd ${workerdUs.toFixed(0)} µs, load generator ${v.clientUs.toFixed(0)} µs`,
      );
    }
    console.log(
      `median of ${rounds} rounds (concurrency ${concurrency}, ${seconds} s, warm-up ${warmup}): workerd's port ${median(rows.map((x) => x.d.rps)).toFixed(0)} req/s, edge ${median(rows.map((x) => x.v.rps)).toFixed(0)} req/s, ratio ${median(rows.map((x) => x.v.rps / x.d.rps)).toFixed(2)}; CPU per request: edge ${median(rows.map((x) => x.edgeUs)).toFixed(0)} µs, workerd ${median(rows.map((x) => x.workerdUs)).toFixed(0)} µs, load generator ${median(rows.map((x) => x.v.clientUs)).toFixed(0)} µs`,
    );
    // What bounds the ratio when the machine's cores are all busy: the edge's CPU is added to each request's cost.
    const e = median(rows.map((x) => x.edgeUs));
    const w = median(rows.map((x) => x.workerdUs));
    const c = median(rows.map((x) => x.v.clientUs));
    console.log(
      `CPU-bound ceiling of the ratio (load generator + workerd) / (load generator + workerd + edge): ${((c + w) / (c + w + e)).toFixed(2)}`,
    );
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
