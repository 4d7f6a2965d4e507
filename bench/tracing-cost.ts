/**
 * What tracing costs the REST bridge, measured in one run, one process, one warm platform: requests
 * per second of `GET /api/v1/publisher/runtime-options` (bridge → gateway in-process → subgraph →
 * MongoDB key lookup) with
 *   off      nothing recorded (as when OTEL_EXPORTER_OTLP_ENDPOINT is unset); context and
 *            trace_id/request_id on log lines still flow
 *   on 10%   a tenth of traces recorded and exported over OTLP/HTTP to a local receiver
 *   on 100%  every trace recorded and exported (for scale)
 * Modes take turns (the sampler is switched between rounds) for BENCH_ROUNDS rounds (default 5) of
 * BENCH_SECONDS each (default 5), 16 keep-alive clients in a worker thread (bench/keep-alive-load.ts);
 * the median of each mode is compared, so a busy neighbour on a shared machine skews every mode alike.
 * CPU time per request (this process: server and load client, whose share is the same in every
 * mode) is printed too: on a machine shared with other work it is steadier than throughput.
 * Metrics (prom-client) are on throughout.
 * Run: `npm run -s build && node bin/platform.js infra up && node dist/bench/tracing-cost.js`.
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { startPlatform } from '../app/platform';
import { loadConfig } from '../core/config';
import { flushTracing, setSamplingRatio } from '../core/telemetry/tracing';
import { hammerInWorker } from './keep-alive-load';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONCURRENCY = 16;
const MODES: Array<[string, number | null]> = [
  ['off', null],
  ['on 10%', 0.1],
  ['on 100%', 1],
];

/** A stand-in OTLP/HTTP receiver: accepts span batches, counts their bytes, answers 200. */
async function otlpSink(): Promise<{ url: string; bytes: () => number; close: () => Promise<void> }> {
  let bytes = 0;
  const server = http.createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bytes: () => bytes,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  // Access log lines at info would cost more than what is measured.
  process.env.LOG_LEVEL = 'warn';
  const sink = await otlpSink();
  // The platform registers tracing as it starts: with an endpoint, spans go to the receiver.
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = sink.url;
  const id = randomBytes(4).toString('hex');
  const base = loadConfig(process.env);
  const config = loadConfig({
    ...process.env,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '1000000000',
    MONGODB_URI: base.mongodbUri.replace(/\/[^/?]*(\?|$)/, `/bench_${id}$1`),
  });
  const platform = await startPlatform({ config, bridgePort: 0, routerPort: 0, subgraphBasePort: 0, topicPrefix: `bench${id}` });
  try {
    const { key } = await platform.services.identity.createApiKey({ accountSlug: `bench-${id}`, plan: 'pro' });
    const url = `${platform.bridgeUrl}/api/v1/publisher/runtime-options`;
    const headers = { authorization: `Bearer ${key}` };
    console.log(
      `tracing cost on the bridge: GET runtime-options, ${CONCURRENCY} clients, ${ROUNDS} rounds × ${SECONDS} s per mode, ` +
        `${os.cpus().length} cores (load ${os.loadavg()[0].toFixed(1)}), node ${process.version}, ${new Date().toISOString()}`,
    );
    setSamplingRatio(null);
    await hammerInWorker(url, CONCURRENCY, 2, 300, headers); // warm-up: JIT, query plans, key cache
    const rps = new Map<string, number[]>();
    const bytes = new Map<string, number>();
    const cpuPerRequest = new Map<string, number[]>();
    for (let round = 1; round <= ROUNDS; round++) {
      const line: string[] = [];
      for (const [mode, ratio] of MODES) {
        setSamplingRatio(ratio);
        const before = sink.bytes();
        const cpu = process.cpuUsage();
        const r = await hammerInWorker(url, CONCURRENCY, SECONDS, 20, headers);
        await flushTracing();
        const used = process.cpuUsage(cpu);
        cpuPerRequest.set(mode, [...(cpuPerRequest.get(mode) ?? []), (used.user + used.system) / (r * SECONDS)]);
        rps.set(mode, [...(rps.get(mode) ?? []), r]);
        bytes.set(mode, (bytes.get(mode) ?? 0) + sink.bytes() - before);
        line.push(`${mode} ${Math.round(r)}`);
      }
      console.log(`  round ${round}: ${line.join('  ')} req/s`);
    }
    const off = median(rps.get('off')!);
    const offCpu = median(cpuPerRequest.get('off')!);
    for (const [mode] of MODES) {
      const m = median(rps.get(mode)!);
      const c = median(cpuPerRequest.get(mode)!);
      const cost = mode === 'off' ? '' : `  cost ${(((off - m) / off) * 100).toFixed(1)} %`;
      const cpuCost = mode === 'off' ? '' : ` (${(((c - offCpu) / offCpu) * 100).toFixed(1)} %)`;
      console.log(
        `${mode.padEnd(8)} ${Math.round(m)} req/s (median)${cost}  CPU ${(c / 1000).toFixed(2)} ms/request${cpuCost}  OTLP ${Math.round((bytes.get(mode) ?? 0) / 1024)} KiB exported`,
      );
    }
  } finally {
    await platform.conn.dropDatabase().catch(() => undefined);
    await platform.stop();
    await sink.close();
  }
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
