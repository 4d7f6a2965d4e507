/**
 * Provisioning of a hosted real site through the whole platform (docs/decisions/0225-hosted-pool-node.md):
 * `POST /sites` to the operation's completion and to the first 200 through the edge, with the real
 * executor and Ghost from the runtime cache (cached: run a real-site test or `dataplane-ghost` first).
 * Sites are created one after another (BENCH_SITES, default 3); the median and each run are printed.
 *
 * Run: `npm run -s build && node dist/bench/hosted-provision.js`. Not part of `npm run bench`.
 */
import 'reflect-metadata';
import path from 'node:path';
import { startBenchPlatform, statusViaEdge as viaEdge } from './bench-platform';

async function main(): Promise<void> {
  const count = Math.max(1, Number(process.env.BENCH_SITES ?? 3));
  const bench = await startBenchPlatform('bench-hosted', {
    PUBLISHER_EXECUTOR: 'real',
    PUBLISHER_NODE_MEMORY_MB: '100000',
    EDGE_PORT: '0',
    RATE_LIMIT_PER_MINUTE: '1000000',
    DATA_DIR: path.join(process.env.TMPDIR ?? '/tmp', `bench-hosted-data-${process.pid}`),
  });
  const { platform, bridge, id } = bench;
  try {
    const { key } = await platform.services.identity.createApiKey({ accountSlug: `bench-${id}`, plan: 'pro' });
    const rest = async (method: string, p: string, body?: unknown) => {
      const r = await fetch(`${bridge}${p}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return (await r.json()) as { data: any };
    };
    const runs: Array<{ completedMs: number; first200Ms: number }> = [];
    for (let i = 0; i < count; i++) {
      const t0 = Date.now();
      const created = (await rest('POST', '/api/v1/publisher/sites', { name: `Bench ${i}` })).data;
      const projectId = created.project.id;
      const host = new URL(created.site_url).host;
      let op: any;
      for (;;) {
        op = (await rest('GET', `/api/v1/publisher/projects/${projectId}/operations/${created.operation.id}`)).data;
        if (op.status === 'completed' || op.status === 'failed') break;
        await new Promise((r) => setTimeout(r, 50));
      }
      if (op.status !== 'completed') throw new Error(`provision failed: ${op.error_code} ${op.error_message}`);
      const completedMs = Date.now() - t0;
      while ((await viaEdge(platform.edgeUrl!, host)) !== 200) await new Promise((r) => setTimeout(r, 50));
      runs.push({ completedMs, first200Ms: Date.now() - t0 });
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    console.log(
      JSON.stringify({
        sites: count,
        medianCompletedMs: median(runs.map((r) => r.completedMs)),
        medianFirst200Ms: median(runs.map((r) => r.first200Ms)),
        runs,
      }),
    );
  } finally {
    await bench.stop();
  }
}

void main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
