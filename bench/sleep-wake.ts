/**
 * Sleep and wake of hosted Ghost sites through the whole platform (docs/decisions/0340-sleep-and-wake.md).
 *
 * 1. Time to wake: one `free` plan site is put to sleep BENCH_WAKES times (default 20) and the time
 *    from a request through the edge to its 200 is measured (the edge holds it while the site
 *    wakes); p50, p95 and max. Goal p95 ≤ 4 s on the 2-core build machine.
 * 2. Sites per node: `free` plan sites are created one after another, each its own account, on a
 *    node that gives awake sites BENCH_AWAKE (default 10) runtime floors of memory, until
 *    `node_capacity_exhausted`, BENCH_SITES (default 200) sites, or less than BENCH_MIN_FREE_GB
 *    (default 5) of disk is left; it says which stopped it. Goal ≥ 200 with at most 10 awake.
 * 3. Resident memory: the platform process, the awake sites' processes, and the sleeping sites
 *    (no process: their files on disk only).
 *
 * Run: `npm run -s build && node dist/bench/sleep-wake.js`. Not part of `npm run bench`: it boots
 * hundreds of Ghost sites (about BENCH_SITES × 10 s).
 */
import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { statfsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { startBenchPlatform, statusViaEdge as viaEdge } from './bench-platform';

const FLOOR_MB = 512;

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
const mib = (bytes: number) => `${(bytes / 1048576).toFixed(0)} MiB`;

async function main(): Promise<void> {
  const wakes = Math.max(1, Number(process.env.BENCH_WAKES ?? 20));
  const target = Math.max(1, Number(process.env.BENCH_SITES ?? 200));
  const awakeMax = Math.max(1, Number(process.env.BENCH_AWAKE ?? 10));
  const minFreeGb = Number(process.env.BENCH_MIN_FREE_GB ?? 5);
  const dataDir = path.join(process.env.TMPDIR ?? '/tmp', `bench-sleep-data-${process.pid}`);
  const bench = await startBenchPlatform('bench-sleep', {
    PUBLISHER_EXECUTOR: 'real',
    PUBLISHER_NODE_MEMORY_MB: String(awakeMax * FLOOR_MB),
    PUBLISHER_IDLE_SLEEP_MS: String(15 * 60_000),
    EDGE_PORT: '0',
    RATE_LIMIT_PER_MINUTE: '1000000',
    DATA_DIR: dataDir,
  });
  const { platform, bridge, id } = bench;
  const plane = platform.dataPlane!;
  const sitesRoot = path.join(dataDir, 'sites');
  try {
    type Created = { projectId: string; host: string } | { refused: { code: string; message: string } };
    const create = async (i: number): Promise<Created> => {
      const { key } = await platform.services.identity.createApiKey({ accountSlug: `bench-${id}-${i}`, plan: 'free' });
      const rest = async (method: string, p: string, body?: unknown) => {
        const r = await fetch(`${bridge}${p}`, {
          method,
          headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
          body: body ? JSON.stringify(body) : undefined,
        });
        return { status: r.status, body: (await r.json()) as { data: any; error?: { code: string; message: string } } };
      };
      const created = await rest('POST', '/api/v1/publisher/sites', { name: `Sleepy ${i}` });
      if (created.status !== 202) return { refused: created.body.error ?? { code: String(created.status), message: '' } };
      const projectId: string = created.body.data.project.id;
      for (;;) {
        const op = (await rest('GET', `/api/v1/publisher/projects/${projectId}/operations/${created.body.data.operation.id}`))
          .body.data;
        if (op.status === 'failed') throw new Error(`site ${i}: provision failed: ${op.error_code} ${op.error_message}`);
        if (op.status === 'completed') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      return { projectId, host: new URL(created.body.data.site_url).host };
    };

    // 1. Time to wake.
    const first = await create(0);
    if (!('projectId' in first)) throw new Error(`the first site was refused: ${first.refused.code}`);
    while ((await viaEdge(platform.edgeUrl!, first.host)) !== 200) await new Promise((r) => setTimeout(r, 100));
    const times: number[] = [];
    for (let i = 0; i < wakes; i++) {
      if (!(await plane.sites.sleep(first.projectId, 'idle'))) throw new Error('the site did not go to sleep');
      const t0 = process.hrtime.bigint();
      const status = await viaEdge(platform.edgeUrl!, first.host);
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (status !== 200) throw new Error(`wake ${i}: answered ${status}`);
      times.push(ms);
    }
    console.log(
      `time to wake (request to a sleeping Ghost site → 200 through the edge), ${wakes} wakes: ` +
        `p50 ${pct(times, 50).toFixed(0)} ms, p95 ${pct(times, 95).toFixed(0)} ms, max ${Math.max(...times).toFixed(0)} ms (goal p95 ≤ 4000 ms)`,
    );

    // 2. Sites per node.
    let made = 1;
    let stoppedBy = `the target of ${target} sites`;
    const t0 = Date.now();
    while (made < target) {
      const freeGb = (statfsSync(dataDir).bavail * statfsSync(dataDir).bsize) / 1024 ** 3;
      if (freeGb < minFreeGb) {
        stoppedBy = `the disk (${freeGb.toFixed(1)} GiB left, floor ${minFreeGb} GiB)`;
        break;
      }
      const r = await create(made);
      if (!('projectId' in r)) {
        stoppedBy = `${r.refused.code}: ${r.refused.message}`;
        break;
      }
      made++;
      if (made % 10 === 0)
        console.log(
          `  ${made} sites, ${plane.sites.awake().length} awake, ${((Date.now() - t0) / (made - 1) / 1000).toFixed(1)} s per site`,
        );
    }
    const awake = plane.sites.awake();
    console.log(
      `sites on one node with sleeping on: ${made} provisioned, ${awake.length} awake (memory for ${awakeMax} awake), stopped by ${stoppedBy}; ` +
        `${((Date.now() - t0) / Math.max(1, made - 1) / 1000).toFixed(1)} s per provisioning`,
    );

    // 3. Resident memory.
    const rss = awake.reduce((sum, s) => sum + (plane.supervisor.status(s.siteId)?.rssBytes ?? 0), 0);
    const disk = execFileSync('du', ['-sb', sitesRoot], { encoding: 'utf8' }).split('\t')[0];
    console.log(
      `resident memory: platform process ${mib(process.memoryUsage().rss)}; ${awake.length} awake sites ${mib(rss)} ` +
        `(${mib(rss / Math.max(1, awake.length))} each); ${made - awake.length} sleeping sites 0 (no process), ` +
        `their files ${mib(Number(disk))} on disk for all ${made} (${mib(Number(disk) / made)} each)`,
    );
  } finally {
    await bench.stop();
    // The sites' files are the run's own (the bench platform removes only its scratch directory).
    await rm(dataDir, { recursive: true, force: true });
  }
}

void main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
