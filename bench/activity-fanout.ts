/**
 * Activity fan-out figures (issue 15): BENCH_SUBSCRIBERS (1,000) graphql-ws subscribers of one
 * project's `operationActivity` feed on the router, each on its own socket by default
 * (BENCH_CONNECTIONS, 1,000), then BENCH_CHANGES (20) operation status changes published one every
 * BENCH_GAP_MS (500). Prints p50/p99/max delivery latency from the engine write to each
 * subscriber (outbox → Kafka → projection → Kafka → router → socket), how many deliveries arrived,
 * and the process's memory (RSS and heap) before the subscribers, with them, and after the events.
 * Platform and clients share one process, so memory is both sides together.
 * Subscribers count as registered once each has received a warm-up event (no fixed sleep).
 * Run: `npm run -s build && node dist/bench/activity-fanout.js`.
 */
import 'reflect-metadata';
import { randomBytes, randomUUID } from 'node:crypto';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { startPlatform } from '../app/platform';
import { loadConfig } from '../core/config';

process.env.APOLLO_TELEMETRY_DISABLED = '1';
const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 1000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? SUBSCRIBERS);
const CHANGES = Number(process.env.BENCH_CHANGES ?? 20);
const GAP_MS = Number(process.env.BENCH_GAP_MS ?? 500);
/** How long the warm-up may take to reach every subscriber: 120 s. */
const WARMUP_MS = 120_000;

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const mb = (n: number) => `${(n / 1024 / 1024).toFixed(0)} MB`;
const memory = () => {
  const m = process.memoryUsage();
  return `rss ${mb(m.rss)}, heap ${mb(m.heapUsed)}`;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const id = randomBytes(4).toString('hex');
  const base = loadConfig(process.env);
  const config = loadConfig({
    ...process.env,
    LOG_LEVEL: 'warn',
    MONGODB_URI: base.mongodbUri.replace(/\/[^/?]*(\?|$)/, `/bench_${id}$1`),
  });
  const platform = await startPlatform({ config, bridgePort: 0, routerPort: 0, subgraphBasePort: 0, topicPrefix: `bench${id}` });
  const clients: Client[] = [];
  try {
    const created = await platform.services.identity.createApiKey({ accountSlug: `bench-${id}`, plan: 'pro' });
    const projectId = (await platform.services.identity.createProject(created.accountId, 'bench'))._id;
    console.log(
      `activity fan-out bench (node ${process.version}, ${new Date().toISOString()}): ${SUBSCRIBERS} subscribers, ${CONNECTIONS} sockets, ${CHANGES} changes`,
    );
    global.gc?.();
    console.log(`memory before subscribers: ${memory()}`);

    const sentAt = new Map<string, number>();
    const latencies: number[] = [];
    /** Per subscriber: has it seen anything yet (the warm-up proves it registered). */
    const seen = new Array<boolean>(SUBSCRIBERS).fill(false);
    for (let c = 0; c < CONNECTIONS; c++) {
      clients.push(
        createClient({
          url: platform.routerUrl!.replace(/^http/, 'ws'),
          webSocketImpl: WebSocket,
          connectionParams: { authorization: `Bearer ${created.key}` },
          retryAttempts: 0,
          lazy: false,
        }),
      );
    }
    const errors: unknown[] = [];
    for (let s = 0; s < SUBSCRIBERS; s++) {
      clients[s % CONNECTIONS].subscribe(
        { query: 'subscription($p: ID!) { operationActivity(projectId: $p) }', variables: { p: projectId } },
        {
          next: (v) => {
            const item = (v.data as { operationActivity: { id: string } } | undefined)?.operationActivity;
            if (!item) return;
            seen[s] = true;
            const t0 = sentAt.get(item.id);
            if (t0) latencies.push(performance.now() - t0);
          },
          error: (e) => errors.push(e),
          complete: () => undefined,
        },
      );
    }

    const change = async (measured: boolean) => {
      const opId = randomUUID();
      if (measured) sentAt.set(`operation:${opId}`, performance.now());
      // An operation type nobody executes: exactly one status change (queued) per enqueue.
      await platform.engine.enqueue({
        id: opId,
        accountId: created.accountId,
        projectId,
        resourceType: 'bench',
        resourceId: projectId,
        operationType: 'bench_noop',
      });
    };

    // Warm up until every subscriber has received an event: then all are registered.
    const warmStart = Date.now();
    while (seen.some((x) => !x) && Date.now() - warmStart < WARMUP_MS) {
      await change(false);
      await sleep(1000);
    }
    const registered = seen.filter(Boolean).length;
    console.log(
      `registered ${registered}/${SUBSCRIBERS} in ${((Date.now() - warmStart) / 1000).toFixed(1)} s; errors ${errors.length}`,
    );
    global.gc?.();
    console.log(`memory with subscribers: ${memory()}`);

    for (let i = 0; i < CHANGES; i++) {
      await change(true);
      await sleep(GAP_MS);
    }
    const expected = registered * CHANGES;
    const deadline = Date.now() + 30_000;
    while (latencies.length < expected && Date.now() < deadline) await sleep(100);
    const s = [...latencies].sort((a, b) => a - b);
    console.log(
      `delivery latency: p50 ${pct(s, 50).toFixed(1)} ms, p99 ${pct(s, 99).toFixed(1)} ms, max ${s[s.length - 1].toFixed(1)} ms; delivered ${latencies.length}/${expected}`,
    );
    console.log(`memory after events: ${memory()}`);
  } finally {
    await Promise.all(clients.map((c) => c.dispose()));
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
