/**
 * Latency of the same read through every layer, measured in one run on this machine:
 *   REST bridge  GET /api/v1/publisher/runtime-options  (bridge → gateway in-process → subgraph)
 *   router       POST /graphql { runtimeOptions }       (gateway → in-process subgraph)
 *   subgraph     POST /graphql straight to the publisher subgraph with a signed principal
 * Bounded: BENCH_REQUESTS sequential requests per target (default 2000) after a warm-up, then the
 * same at concurrency 16, from a worker thread (its own event loop). BENCH_QUERY replaces the GraphQL
 * query of the router and subgraph lines (e.g. `{ __typename }` for the bare transport cost). Run: `npm run -s build && node dist/bench/latency.js` (also part of `npm run bench`).
 */
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { startBenchPlatform } from './bench-platform';
import { PRINCIPAL_HEADER, signPrincipal } from '../core/principal';

process.env.APOLLO_TELEMETRY_DISABLED = '1';
const N = Number(process.env.BENCH_REQUESTS ?? 2000);
const CONCURRENCY = 16;

interface Target {
  name: string;
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  /** Signs a fresh principal header per request (bound to this subgraph and a new request id). */
  signed?: { principal: Parameters<typeof signPrincipal>[0]; audience: string; key: string };
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function send(agent: http.Agent, t: Target): Promise<number> {
  return new Promise((resolve, reject) => {
    let headers = t.headers;
    if (t.signed) {
      const requestId = randomUUID();
      const binding = { audience: t.signed.audience, requestId };
      headers = {
        ...headers,
        'x-request-id': requestId,
        [PRINCIPAL_HEADER]: signPrincipal(t.signed.principal, binding, t.signed.key),
      };
    }
    const req = http.request(t.url, { method: t.method, headers, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(t.body);
  });
}

/** Runs in a worker thread, so the load generator does not share the servers' event loop. */
async function measure(t: Target, concurrency: number, n: number): Promise<string> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  for (let i = 0; i < 200; i++) await send(agent, t);
  const times: number[] = [];
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < n) {
      next++;
      const t0 = performance.now();
      const status = await send(agent, t);
      if (status !== 200) throw new Error(`${t.name}: HTTP ${status}`);
      times.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  times.sort((a, b) => a - b);
  const f = (x: number) => x.toFixed(2).padStart(7);
  return `${t.name.padEnd(10)} c=${String(concurrency).padEnd(3)} p50 ${f(pct(times, 50))} ms  p95 ${f(pct(times, 95))} ms  p99 ${f(pct(times, 99))} ms  ${Math.round(n / elapsed)} req/s`;
}

function inWorker(t: Target, concurrency: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const w = new Worker(__filename, { workerData: { t, concurrency, n: N } });
    w.once('message', resolve);
    w.once('error', reject);
  });
}

async function main(): Promise<void> {
  const bench = await startBenchPlatform('bench-latency');
  const { platform, id } = bench;
  try {
    const created = await platform.services.identity.createApiKey({ accountSlug: `bench-${id}`, plan: 'pro' });
    const auth = { authorization: `Bearer ${created.key}` };
    const principal = await platform.services.identity.authenticate(created.key);
    const query = JSON.stringify({
      query: process.env.BENCH_QUERY ?? '{ runtimeOptions { version label image digest isDefault upgradePredecessors } }',
    });
    const json = { 'content-type': 'application/json' };
    const targets: Target[] = [
      { name: 'bridge', url: `${platform.bridgeUrl}/api/v1/publisher/runtime-options`, method: 'GET', headers: auth },
      { name: 'router', url: platform.routerUrl!, method: 'POST', headers: { ...json, ...auth }, body: query },
      {
        name: 'subgraph',
        url: platform.subgraphUrls.publisher,
        method: 'POST',
        // Signed per request, as the router does: a principal header is valid for 30 s, one subgraph and one request id.
        headers: json,
        signed: { principal, audience: 'publisher', key: platform.config.INTERNAL_SIGNING_KEY },
        body: query,
      },
    ];
    console.log(
      `latency of runtime-options, ${N} requests per line, client in a worker thread (node ${process.version}, ${new Date().toISOString()})`,
    );
    for (const c of [1, CONCURRENCY]) for (const t of targets) console.log(await inWorker(t, c));
  } finally {
    await bench.stop();
  }
  process.exit(0);
}

if (isMainThread) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
} else {
  const { t, concurrency, n } = workerData as { t: Target; concurrency: number; n: number };
  void measure(t, concurrency, n).then((line) => parentPort!.postMessage(line));
}
