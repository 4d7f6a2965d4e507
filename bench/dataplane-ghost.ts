/**
 * The data plane with a real Ghost site (docs/decisions/0120-data-plane.md): the runtime cache's
 * `ensure` (cold when the cache lacks the release, else cached), a site's start to its first 200
 * through the edge, its RSS, and the edge's requests per second on the site's home page against the
 * same page fetched straight from the site's port, alternating rounds in the same run (goal ≥ 0.9).
 *
 * Provisioning to first 200 is measured from an empty site directory: install (cached, or with
 * BENCH_UNCACHED=1 into a temporary cache directory, removed afterwards), start, migrate, answer
 * through the edge. RSS is reported per running site, for BENCH_SITES sites (default 2) running at once.
 *
 * Run: `npm run -s build && node dist/bench/dataplane-ghost.js` (BENCH_SECONDS per round, 10;
 * BENCH_ROUNDS, 2; BENCH_CONCURRENCY, 8; BENCH_SITES, 2; BENCH_UNCACHED=1 for a cold install).
 * Not part of `npm run bench`: a cold cache takes minutes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
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
  const siteCount = Math.max(1, Number(process.env.BENCH_SITES ?? 2));
  const coldRoot = process.env.BENCH_UNCACHED === '1' ? mkdtempSync(path.join(tmpdir(), 'bench-runtimes-')) : null;
  const cache = new RuntimeCache(coldRoot ? { root: coldRoot } : {});
  const cached = (await cache.installed(GHOST)) !== null;
  const sup = new Supervisor();
  const edge = new Edge({ port: 0 });
  const sitesRoot = mkdtempSync(path.join(tmpdir(), 'bench-sites-'));
  const sites = new SiteHost({ cache, supervisor: sup, edge, sitesRoot });
  try {
    await edge.listen();
    const host = `bench.sites.localhost:${edge.port}`;
    const t0 = Date.now();
    await sites.pullRuntime(GHOST);
    const ensureMs = Date.now() - t0;
    let t = Date.now();
    const { port } = await sites.start({ siteId: 'bench', runtime: GHOST, url: `http://${host}/`, hosts: [host], memoryMb: 512 });
    await firstOk(edge.port, host);
    console.log(
      `provisioning to first 200 (${cached ? 'runtime cached' : 'runtime uncached'}): ${Date.now() - t0} ms (install ${ensureMs} ms, start to first 200 through the edge ${Date.now() - t} ms)`,
    );
    await sites.configure('bench', { name: 'Bench', email: 'bench@example.test', title: 'Bench' });
    const headers = { host };
    for (let r = 0; r < rounds; r++) {
      // Straight to the site: its unix socket when it runs in the sandbox, else its port.
      const socketPath = sup.status('bench')?.socketPath ?? undefined;
      const direct = await loadInWorker({ url: `http://127.0.0.1:${port}/`, headers, socketPath }, concurrency, seconds, 20);
      const via = await loadInWorker({ url: `http://127.0.0.1:${edge.port}/`, headers }, concurrency, seconds, 20);
      console.log(
        `round ${r + 1}: direct ${direct.rps.toFixed(1)} req/s (p99 ${direct.p99.toFixed(0)} ms), edge ${via.rps.toFixed(1)} req/s (p99 ${via.p99.toFixed(0)} ms), ratio ${(via.rps / direct.rps).toFixed(2)}`,
      );
    }
    for (let i = 1; i < siteCount; i++) {
      const h = `bench${i}.sites.localhost:${edge.port}`;
      t = Date.now();
      await sites.start({ siteId: `bench${i}`, runtime: GHOST, url: `http://${h}/`, hosts: [h], memoryMb: 512 });
      await firstOk(edge.port, h);
      console.log(`site ${i + 1}: start to first 200 (cached) ${Date.now() - t} ms`);
    }
    const ids = ['bench', ...Array.from({ length: siteCount - 1 }, (_, i) => `bench${i + 1}`)];
    const rss = ids.map((id) => (sup.status(id)?.rssBytes ?? 0) / 1048576);
    console.log(
      `RSS per running site (${ids.length} running, after the load): ${rss.map((r) => `${Math.round(r)}`).join(', ')} MiB; mean ${Math.round(rss.reduce((a, b) => a + b, 0) / rss.length)} MiB`,
    );
  } finally {
    await sup.removeAll();
    await edge.close();
    rmSync(sitesRoot, { recursive: true, force: true });
    if (coldRoot) rmSync(coldRoot, { recursive: true, force: true });
  }
}

/** Waits for `GET /` through the edge to answer 200. */
async function firstOk(edgePort: number, host: string): Promise<void> {
  for (;;) {
    const status = await new Promise<number>((resolve) => {
      const req = http.get({ host: '127.0.0.1', port: edgePort, path: '/', headers: { host }, agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', () => resolve(0));
    });
    if (status === 200) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
