/**
 * Commerce releases on the data plane (docs/decisions/0130-commerce-runtime.md): a storefront bundle
 * (the test fixture) in workerd, its deploy-to-healthy time (process start until `GET /` answers 2xx
 * through the edge), and requests per second on its address through the edge against workerd's own
 * port, alternating rounds in the same run (goal ≥ 0.9).
 *
 * Run: `npm run -s build && node dist/bench/commerce-edge.js` (BENCH_SECONDS per round, 10;
 * BENCH_ROUNDS, 2; BENCH_CONCURRENCY, 8; BENCH_DEPLOYS, 3). Not part of `npm run bench`.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Edge } from '../dataplane/edge';
import { ReleaseHost, releaseHost } from '../dataplane/releases';
import { Supervisor } from '../dataplane/supervisor';
import { loadInWorker } from './load-stats';

const FIXTURE = path.resolve(__dirname, '..', '..', 'test', 'fixtures', 'commerce', 'storefront');

async function main(): Promise<void> {
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
  const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 8);
  const deploys = Number(process.env.BENCH_DEPLOYS ?? 3);
  const supervisor = new Supervisor();
  const edge = new Edge({ port: 0 });
  const root = mkdtempSync(path.join(tmpdir(), 'bench-releases-'));
  const host = new ReleaseHost({ supervisor, edge, releasesRoot: root });
  try {
    await edge.listen();
    const env = { PUBLIC_STORE_DOMAIN: 'bench.example', SESSION_SECRET: 'bench-session-secret' };
    let id = '';
    for (let i = 0; i < deploys; i++) {
      id = `bench-${i}`;
      cpSync(FIXTURE, path.join(host.releaseDir(id), 'bundle'), { recursive: true });
      const gate = await host.start({ releaseId: id, projectId: 'bench', kind: 'storefront', env });
      if (!gate.healthy) throw new Error(`release ${id} failed its gate: ${gate.last}`);
      console.log(`deploy ${i + 1}: start to healthy through the edge ${gate.ms} ms`);
      if (i < deploys - 1) await host.remove(id);
    }
    const port = supervisor.status(id)!.port;
    const headers = { host: `${releaseHost(id)}:${edge.port}` };
    for (let r = 0; r < rounds; r++) {
      const direct = await loadInWorker({ url: `http://127.0.0.1:${port}/`, headers }, concurrency, seconds, 50);
      const via = await loadInWorker({ url: `http://127.0.0.1:${edge.port}/`, headers }, concurrency, seconds, 50);
      console.log(
        `round ${r + 1}: workerd's port ${direct.rps.toFixed(0)} req/s (p99 ${direct.p99.toFixed(1)} ms), edge ${via.rps.toFixed(0)} req/s (p99 ${via.p99.toFixed(1)} ms), ratio ${(via.rps / direct.rps).toFixed(2)}`,
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
