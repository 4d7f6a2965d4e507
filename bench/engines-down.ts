/**
 * How fast the bridge answers when MongoDB becomes unreachable (spine point 12): the platform runs
 * against a TCP proxy in front of the MongoDB-wire server; the proxy is taken down and each request
 * is timed, for a key the principal cache knows (the subgraph hits the database) and for an unknown
 * key (authentication hits the database). Prints status, Retry-After and the latency percentiles.
 *
 *   npm run -s build && node dist/bench/engines-down.js      (BENCH_REQUESTS=20)
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { startPlatform } from '../app/platform';
import { loadConfig } from '../core/config';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20);

async function main() {
  const base = loadConfig(process.env);
  const real = new URL(base.mongodbUri);
  const sockets = new Set<net.Socket>();
  const proxy = net.createServer((c) => {
    const u = net.connect(Number(real.port || 27017), real.hostname);
    sockets.add(c).add(u);
    c.pipe(u).pipe(c);
    const drop = () => (c.destroy(), u.destroy());
    c.on('error', drop).on('close', drop);
    u.on('error', drop).on('close', drop);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
  const id = randomBytes(4).toString('hex');
  const config = loadConfig({
    ...process.env,
    MONGODB_URI: `mongodb://127.0.0.1:${(proxy.address() as net.AddressInfo).port}/bench_down_${id}`,
    LOG_LEVEL: 'silent',
  });
  const platform = await startPlatform({
    config,
    bridgePort: 0,
    routerPort: 0,
    cdnPort: 0,
    serveSubgraphs: false,
    workers: false,
    topicPrefix: `b${id}`,
  });
  const key = (await platform.services.identity.createApiKey({ accountSlug: `down-${id}`, plan: 'pro' })).key;
  const call = async (bearer: string) => {
    const t0 = performance.now();
    const res = await fetch(`${platform.bridgeUrl}/api/v1/publisher/sites`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Down' }),
    });
    const body = (await res.json()) as { error?: { code?: string } };
    return { ms: performance.now() - t0, status: res.status, retryAfter: res.headers.get('retry-after'), code: body.error?.code };
  };
  await call(key); // warm: the principal cache now knows the key
  proxy.close();
  for (const s of sockets) s.destroy();
  for (const [label, bearer] of [
    ['known key (cached principal)', key],
    ['unknown key (authentication)', `pk_${randomBytes(6).toString('hex')}_${randomBytes(24).toString('base64url')}`],
  ] as const) {
    const runs = [];
    for (let i = 0; i < REQUESTS; i++) runs.push(await call(bearer));
    const ms = runs.map((r) => r.ms).sort((a, b) => a - b);
    const pct = (p: number) => ms[Math.min(ms.length - 1, Math.floor((p / 100) * ms.length))].toFixed(0);
    const statuses = [...new Set(runs.map((r) => `${r.status} ${r.code} retry-after=${r.retryAfter}`))].join(', ');
    console.log(
      `${label}: ${REQUESTS} requests → ${statuses}; p50 ${pct(50)} ms, p95 ${pct(95)} ms, max ${ms[ms.length - 1].toFixed(0)} ms`,
    );
  }
  await platform.stop().catch(() => undefined);
  process.exit(0);
}

void main();
