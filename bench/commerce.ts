/**
 * Commerce figures on this machine, through the real bridge, MongoDB-wire server and Kafka:
 *   - analytics latency per range over BENCH_SAMPLES recorded traffic samples spread over 30 days
 *   - verified webhook intake (Standard Webhooks signature over the raw body, one observation each)
 * Bounded: BENCH_REQUESTS sequential requests per line (default 200). Run:
 *   npm run -s build && node bin/platform.js infra up && node dist/bench/commerce.js
 */
import 'reflect-metadata';
import { randomBytes, randomUUID } from 'node:crypto';
import { startPlatform } from '../app/platform';
import { loadConfig } from '../core/config';
import type { CommerceService } from '../subgraphs/commerce/service';
import { WEBHOOK_RECEIVER_PATH } from '../subgraphs/commerce/service';
import { signWebhook } from '../subgraphs/commerce/webhook-signature';

process.env.APOLLO_TELEMETRY_DISABLED = '1';
const N = Number(process.env.BENCH_REQUESTS ?? 200);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 2000);

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function timed(label: string, n: number, fn: (i: number) => Promise<void>): Promise<void> {
  const times: number[] = [];
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn(i);
    times.push(performance.now() - t0);
  }
  const total = (performance.now() - start) / 1000;
  times.sort((a, b) => a - b);
  console.log(
    `${label.padEnd(34)} ${String(n).padStart(5)} req  ${(n / total).toFixed(0).padStart(6)} req/s  p50 ${pct(times, 50).toFixed(1)} ms  p95 ${pct(times, 95).toFixed(1)} ms`,
  );
}

async function main(): Promise<void> {
  const id = randomBytes(4).toString('hex');
  const base = loadConfig(process.env);
  const config = loadConfig({
    ...process.env,
    LOG_LEVEL: 'warn',
    SIMULATED_STEP_DELAY_MS: '10',
    MONGODB_URI: base.mongodbUri.replace(/\/[^/?]*(\?|$)/, `/bench_${id}$1`),
    KAFKA_BROKERS: base.kafkaBrokers.join(','),
  });
  const platform = await startPlatform({
    config,
    bridgePort: 0,
    routerPort: 0,
    cdnPort: 0,
    serveSubgraphs: false,
    topicPrefix: `b${id}`,
  });
  try {
    const services = platform.services as unknown as { commerce: CommerceService; identity: any };
    const commerce = services.commerce;
    const key = await services.identity.createApiKey({ accountSlug: `bench-${id}`, plan: 'pro' });
    const project = await services.identity.createProject(key.accountId, 'bench');
    const store = await commerce.control.createStore(`bench-${id}.example`);
    const B = `${platform.bridgeUrl}/api/v1/projects/${project._id}/commerce`;
    const auth = { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' };
    const op = (await (
      await fetch(`${B}/connect`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ kind: 'storefront', store_domain: store.store_domain, confirm_generic_storefront: true }),
      })
    ).json()) as { data: { id: string } };
    for (let i = 0; i < 200; i++) {
      const r = (await (await fetch(`${B}/operations/${op.data.id}`, { headers: auth })).json()) as { data: { status: string } };
      if (r.data.status === 'succeeded') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    for (let i = 0; i < SAMPLES; i++) {
      await commerce.observations.recordTraffic(project._id, 7 + (i % 50), i % 7, Math.floor((i / SAMPLES) * 30 * 24 * 60));
    }
    console.log(`commerce bench: ${SAMPLES} traffic samples over 30 days, ${N} sequential requests per line`);
    for (const range of ['1h', '24h', '7d', '30d']) {
      await timed(`GET analytics?range=${range}`, N, async () => {
        const res = await fetch(`${B}/storefront/analytics?range=${range}`, { headers: auth });
        if (res.status !== 200) throw new Error(`analytics ${res.status}`);
        await res.arrayBuffer();
      });
    }
    await timed('POST signed webhook (recorded)', N, async (i) => {
      const webhookId = randomUUID();
      const raw = JSON.stringify({ id: webhookId, topic: 'orders/create', shop_domain: store.store_domain, payload: { n: i } });
      const ts = Math.floor(Date.now() / 1000);
      const res = await fetch(`${platform.bridgeUrl}${WEBHOOK_RECEIVER_PATH}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': webhookId,
          'webhook-timestamp': String(ts),
          'webhook-signature': signWebhook(commerce.webhookSecret, webhookId, ts, raw),
        },
        body: raw,
      });
      if (res.status !== 200) throw new Error(`webhook ${res.status}`);
      await res.arrayBuffer();
    });
    await timed('GET webhooks (page of 25)', N, async () => {
      const res = await fetch(`${B}/webhooks`, { headers: auth });
      await res.arrayBuffer();
    });
  } finally {
    await platform.conn.dropDatabase().catch(() => undefined);
    await platform.stop();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
