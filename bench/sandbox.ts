/**
 * The tenant sandbox's cost (docs/decisions/0273-tenant-sandbox.md), sandbox on against off in the
 * same run, alternating: a real Ghost site's start to its first 200 through the edge (goal: on ≤ 1.1×
 * off), the edge's requests per second on the site's home page (goal: on ≥ 0.9 of off), and an app
 * release's deploy to healthy behind the edge (goal: on ≤ off + 300 ms).
 *
 * Run: `npm run -s build && node dist/bench/sandbox.js` (BENCH_ROUNDS, 2; BENCH_SECONDS per load, 8;
 * BENCH_CONCURRENCY, 8; BENCH_APP_STARTS per mode and round, 5). Needs the Ghost release in the runtime
 * cache (a first run installs it: minutes). Not part of `npm run bench`: it boots Ghost four times.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { requestLocal } from '../core/outbound-http';
import { projectRoot } from '../core/paths';
import { Edge } from '../dataplane/edge';
import { ReleaseHost, releaseHost } from '../dataplane/releases';
import { RuntimeCache } from '../dataplane/runtime-cache';
import { resolveSandbox } from '../dataplane/sandbox';
import { SiteHost } from '../dataplane/sites';
import { Supervisor } from '../dataplane/supervisor';
import { loadInWorker } from './load-stats';

const GHOST = {
  name: 'ghost',
  version: '5.130.5',
  integrity: 'sha512-s1jsT18VMeBwgfdFuNRwAbM1TPYz/9ZXATjdPUJ5dVPVY9TbatWMC0TGS5fdFyFn5Q/opacxsrMtpUl7HLrrfQ==',
};
const APP = path.join(projectRoot(), 'test', 'fixtures', 'commerce', 'app');

type Mode = 'off' | 'on';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function supervisorFor(mode: Mode): Supervisor {
  if (mode === 'off') return new Supervisor({ sandbox: null });
  const { sandbox, missing } = resolveSandbox({ ...process.env, PLATFORM_SANDBOX: 'on' });
  if (!sandbox) throw new Error(`the sandbox cannot be set up here: ${missing.join('; ')}`);
  return new Supervisor({ sandbox });
}

async function siteRound(
  mode: Mode,
  cache: RuntimeCache,
  seconds: number,
  concurrency: number,
): Promise<{ bootMs: number; rps: number }> {
  const sup = supervisorFor(mode);
  const edge = new Edge({ port: 0 });
  const sitesRoot = mkdtempSync(path.join(tmpdir(), `bench-sandbox-${mode}-`));
  const sites = new SiteHost({ cache, supervisor: sup, edge, sitesRoot });
  try {
    await edge.listen();
    const host = `bench-${mode}.sites.localhost:${edge.port}`;
    await sites.pullRuntime(GHOST);
    const t0 = performance.now();
    await sites.start({ siteId: `bench-${mode}`, runtime: GHOST, url: `http://${host}/`, hosts: [host], memoryMb: 512 });
    for (;;) {
      const r = await requestLocal(edge.port, { headers: { host }, timeoutMs: 30_000 }).catch(() => null);
      if (r?.status === 200) break;
    }
    const bootMs = performance.now() - t0;
    const via = await loadInWorker({ url: `http://127.0.0.1:${edge.port}/`, headers: { host } }, concurrency, seconds, 50);
    return { bootMs, rps: via.rps };
  } finally {
    await sup.shutdown();
    await edge.close();
    rmSync(sitesRoot, { recursive: true, force: true });
  }
}

async function appRound(mode: Mode, starts: number): Promise<number[]> {
  const supervisor = supervisorFor(mode);
  const edge = new Edge({ port: 0 });
  const root = mkdtempSync(path.join(tmpdir(), `bench-sandbox-app-${mode}-`));
  const host = new ReleaseHost({ supervisor, edge, releasesRoot: root });
  const times: number[] = [];
  try {
    await edge.listen();
    for (let i = 0; i < starts; i++) {
      const id = `rel-bench-${mode}-${i}`;
      cpSync(APP, path.join(root, id, 'bundle'), { recursive: true });
      const t0 = performance.now();
      const gate = await host.start({ releaseId: id, projectId: 'p-bench', kind: 'app', env: { SHOPIFY_API_KEY: 'k' } });
      if (!gate.healthy) throw new Error(`${mode}: release ${id} failed its gate: ${gate.last}`);
      const r = await requestLocal(edge.port, { headers: { host: releaseHost(id) }, timeoutMs: 10_000 });
      if (r.status !== 200) throw new Error(`${mode}: ${r.status}`);
      times.push(performance.now() - t0);
      await host.remove(id);
    }
    return times;
  } finally {
    await host.close();
    await supervisor.shutdown();
    await edge.close();
    rmSync(root, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
  const seconds = Number(process.env.BENCH_SECONDS ?? 8);
  const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 8);
  const appStarts = Number(process.env.BENCH_APP_STARTS ?? 5);
  const cache = new RuntimeCache();
  const boot: Record<Mode, number[]> = { off: [], on: [] };
  const rps: Record<Mode, number[]> = { off: [], on: [] };
  const app: Record<Mode, number[]> = { off: [], on: [] };
  for (let r = 0; r < rounds; r++) {
    // Alternate which mode goes first, so neither always meets a warmer page cache.
    const order: Mode[] = r % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
    for (const mode of order) {
      const s = await siteRound(mode, cache, seconds, concurrency);
      boot[mode].push(s.bootMs);
      rps[mode].push(s.rps);
      app[mode].push(...(await appRound(mode, appStarts)));
      console.log(
        `round ${r + 1} sandbox ${mode}: Ghost start to first 200 ${Math.round(s.bootMs)} ms, through the edge ${Math.round(s.rps)} req/s`,
      );
    }
  }
  const f = (n: number) => Math.round(n);
  console.log('\nsandbox on against off (medians, same run):');
  console.log(
    `  Ghost provisioning to first 200: off ${f(median(boot.off))} ms, on ${f(median(boot.on))} ms → ${(median(boot.on) / median(boot.off)).toFixed(2)}× (goal ≤ 1.1×)`,
  );
  console.log(
    `  Ghost through the edge: off ${f(median(rps.off))} req/s, on ${f(median(rps.on))} req/s → ${(median(rps.on) / median(rps.off)).toFixed(2)} (goal ≥ 0.9)`,
  );
  console.log(
    `  app release deploy to healthy: off ${f(median(app.off))} ms, on ${f(median(app.on))} ms → +${f(median(app.on) - median(app.off))} ms (goal ≤ +300 ms)`,
  );
}

main().catch((e: Error) => {
  console.error(e);
  process.exit(1);
});
