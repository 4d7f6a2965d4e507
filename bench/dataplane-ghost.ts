/**
 * The data plane with a real Ghost site (docs/decisions/0120-data-plane.md): the runtime cache's
 * `ensure` (cold when the cache lacks the release, else cached), a site's start to its first 200
 * through the edge, its RSS, and the edge's requests per second on the site's home page against the
 * same page fetched straight from the site's port, alternating rounds in the same run (goal ≥ 0.9).
 *
 * Run: `npm run -s build && node dist/bench/dataplane-ghost.js` (BENCH_SECONDS per round, 10;
 * BENCH_ROUNDS, 2; BENCH_CONCURRENCY, 8). Not part of `npm run bench`: a cold cache takes minutes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Edge } from '../dataplane/edge';
import { RuntimeCache } from '../dataplane/runtime-cache';
import { SiteHost } from '../dataplane/sites';
import { Supervisor } from '../dataplane/supervisor';
import { loadInWorker } from './load-stats';

const GHOST = {
  name: 'ghost',
  version: '5.130.5',
  integrity: 'sha512-s1jsT18VMeBwgfdFuNRwAbM1TPYz/9ZXATjdPUJ5dVPVY9TbatWMC0TGS5fdFyFn5Q/opacxsrMtpUl7HLrrfQ==',
};

async function main(): Promise<void> {
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
  const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 8);
  const cache = new RuntimeCache();
  const cached = (await cache.installed(GHOST)) !== null;
  const sup = new Supervisor();
  const edge = new Edge({ port: 0 });
  const sitesRoot = mkdtempSync(path.join(tmpdir(), 'bench-sites-'));
  const sites = new SiteHost({ cache, supervisor: sup, edge, sitesRoot });
  try {
    let t = Date.now();
    await sites.pullRuntime(GHOST);
    console.log(`ensure ghost@${GHOST.version} (${cached ? 'cached' : 'cold'}): ${Date.now() - t} ms`);
    await edge.listen();
    const host = `bench.sites.localhost:${edge.port}`;
    t = Date.now();
    const { port } = await sites.start({ siteId: 'bench', runtime: GHOST, url: `http://${host}/`, hosts: [host], memoryMb: 512 });
    console.log(`start to first 200 through the edge: ${Date.now() - t} ms`);
    await sites.setUp('bench', { name: 'Bench', email: 'bench@example.test', blogTitle: 'Bench' });
    const headers = { host };
    for (let r = 0; r < rounds; r++) {
      const direct = await loadInWorker({ url: `http://127.0.0.1:${port}/`, headers }, concurrency, seconds, 20);
      const via = await loadInWorker({ url: `http://127.0.0.1:${edge.port}/`, headers }, concurrency, seconds, 20);
      console.log(
        `round ${r + 1}: direct ${direct.rps.toFixed(1)} req/s (p99 ${direct.p99.toFixed(0)} ms), edge ${via.rps.toFixed(1)} req/s (p99 ${via.p99.toFixed(0)} ms), ratio ${(via.rps / direct.rps).toFixed(2)}`,
      );
    }
    console.log(`RSS of the site: ${Math.round((sup.status('bench')?.rssBytes ?? 0) / 1048576)} MiB`);
  } finally {
    await sup.removeAll();
    await edge.close();
    rmSync(sitesRoot, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
