/**
 * Latency of the same read through every layer, measured in one run on this machine:
 *   REST bridge  GET /api/v1/publisher/runtime-options  (bridge → gateway in-process → subgraph)
 *   router       POST /graphql { runtimeOptions }       (gateway → in-process subgraph)
 *   subgraph     POST /graphql straight to the publisher subgraph with a signed principal
 * Bounded: BENCH_REQUESTS sequential requests per target (default 2000) after a warm-up, then the
 * same at concurrency 16. Run: `npm run bench` (brings the engines up first).
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { startPlatform } from '../app/platform';
import { loadConfig } from '../core/config';
import { PRINCIPAL_HEADER, signPrincipal } from '../core/principal';

process.env.APOLLO_TELEMETRY_DISABLED = '1';
const N = Number(process.env.BENCH_REQUESTS ?? 2000);
const CONCURRENCY = 16;

type Target = { name: string; send: () => Promise<Response> };

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function measure(t: Target, concurrency: number): Promise<string> {
  const times: number[] = [];
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < N) {
      next++;
      const t0 = performance.now();
      const res = await t.send();
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${t.name}: HTTP ${res.status}`);
      times.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (performance.now() - started) / 1000;
  times.sort((a, b) => a - b);
  const f = (x: number) => x.toFixed(2).padStart(7);
  return `${t.name.padEnd(10)} c=${String(concurrency).padEnd(3)} p50 ${f(pct(times, 50))} ms  p95 ${f(pct(times, 95))} ms  p99 ${f(pct(times, 99))} ms  ${Math.round(N / elapsed)} req/s`;
}

async function main(): Promise<void> {
  const id = randomBytes(4).toString('hex');
  const base = loadConfig(process.env);
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'warn', MONGODB_URI: base.mongodbUri.replace(/\/[^/?]*(\?|$)/, `/bench_${id}$1`) });
  const platform = await startPlatform({ config, bridgePort: 0, routerPort: 0, subgraphBasePort: 0, topicPrefix: `bench${id}` });
  try {
    const created = await platform.services.identity.createApiKey({ accountSlug: `bench-${id}`, plan: 'pro' });
    const auth = { authorization: `Bearer ${created.key}` };
    const principal = await platform.services.identity.authenticate(created.key);
    const query = JSON.stringify({ query: '{ runtimeOptions { version label image digest isDefault upgradePredecessors } }' });
    const json = { 'content-type': 'application/json' };
    const targets: Target[] = [
      { name: 'bridge', send: () => fetch(`${platform.bridgeUrl}/api/v1/publisher/runtime-options`, { headers: auth }) },
      { name: 'router', send: () => fetch(platform.routerUrl!, { method: 'POST', headers: { ...json, ...auth }, body: query }) },
      {
        name: 'subgraph',
        send: () =>
          fetch(platform.subgraphUrls.publisher, {
            method: 'POST',
            headers: { ...json, [PRINCIPAL_HEADER]: signPrincipal(principal) },
            body: query,
          }),
      },
    ];
    for (const t of targets) for (let i = 0; i < 200; i++) await (await t.send()).arrayBuffer();
    console.log(`latency of runtime-options, ${N} requests per line (node ${process.version}, ${new Date().toISOString()})`);
    for (const c of [1, CONCURRENCY]) for (const t of targets) console.log(await measure(t, c));
  } finally {
    await platform.conn.dropDatabase().catch(() => undefined);
    await platform.stop();
  }
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
