/**
 * Activity fan-out figures (docs/areas/activity.md): BENCH_SUBSCRIBERS (1,000) graphql-ws subscribers of one
 * project's `operationActivity` feed on the router, each on its own socket by default
 * (BENCH_CONNECTIONS, 1,000), then BENCH_CHANGES (20) operation status changes published one every
 * BENCH_GAP_MS (500). Prints p50/p99/max delivery latency from the engine write to each
 * subscriber (outbox → Kafka → projection → Kafka → router → socket), how many deliveries arrived,
 * and the process's memory (RSS and heap) before the subscribers, with them, and after the events.
 * The subscribers run in a worker thread (their own event loop, as remote clients would have), so
 * the figure is the platform's fan-out, not the clients' parsing queued behind it on one loop; both
 * threads stamp times with `performance.timeOrigin + performance.now()`. Memory is the whole
 * process's (platform and clients together).
 * Subscribers count as registered once each has received a warm-up event (no fixed sleep).
 * Run: `npm run -s build && node dist/bench/activity-fanout.js`.
 */
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { createClient, type Client } from 'graphql-ws';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import WebSocket from 'ws';
import { startBenchPlatform } from './bench-platform';

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

/** Wall-clock milliseconds with sub-millisecond resolution, comparable across threads. */
const now = () => performance.timeOrigin + performance.now();

interface ClientsSetup {
  url: string;
  key: string;
  projectId: string;
}
type ToClients = { type: 'report'; sentAt: [string, number][] } | { type: 'close' };
type FromClients =
  { type: 'seen'; registered: number; errors: number } | { type: 'latencies'; values: number[] } | { type: 'closed' };

/** The worker thread: the subscribers. Reports how many have seen an event, then the latencies. */
function runClients(setup: ClientsSetup): void {
  const port = parentPort!;
  const post = (m: FromClients) => port.postMessage(m);
  const clients: Client[] = [];
  /** Arrival times per item id, one per subscriber that got it. */
  const arrivals = new Map<string, number[]>();
  const seen = new Array<boolean>(SUBSCRIBERS).fill(false);
  let registered = 0;
  let errors = 0;
  let reported = -1;
  const report = setInterval(() => {
    if (registered === reported) return;
    reported = registered;
    post({ type: 'seen', registered, errors });
  }, 100);
  for (let c = 0; c < CONNECTIONS; c++) {
    clients.push(
      createClient({
        url: setup.url,
        webSocketImpl: WebSocket,
        connectionParams: { authorization: `Bearer ${setup.key}` },
        retryAttempts: 0,
        lazy: false,
      }),
    );
  }
  for (let s = 0; s < SUBSCRIBERS; s++) {
    clients[s % CONNECTIONS].subscribe(
      { query: 'subscription($p: ID!) { operationActivity(projectId: $p) }', variables: { p: setup.projectId } },
      {
        next: (v) => {
          const at = now();
          const item = (v.data as { operationActivity: { id: string } } | undefined)?.operationActivity;
          if (!item) return;
          if (!seen[s]) {
            seen[s] = true;
            registered++;
          }
          const list = arrivals.get(item.id);
          if (list) list.push(at);
          else arrivals.set(item.id, [at]);
        },
        error: () => {
          errors++;
        },
        complete: () => undefined,
      },
    );
  }
  port.on('message', (m: ToClients) => {
    if (m.type === 'report') {
      const values: number[] = [];
      for (const [id, sent] of m.sentAt) for (const at of arrivals.get(id) ?? []) values.push(at - sent);
      post({ type: 'latencies', values });
    } else {
      clearInterval(report);
      void Promise.all(clients.map((c) => c.dispose())).then(() => {
        post({ type: 'closed' });
        port.close();
      });
    }
  });
}

async function main(): Promise<void> {
  const bench = await startBenchPlatform('bench-fanout');
  const { platform, id } = bench;
  let worker: Worker | undefined;
  try {
    const created = await platform.services.identity.createApiKey({ accountSlug: `bench-${id}`, plan: 'pro' });
    const projectId = (await platform.services.identity.createProject(created.accountId, 'bench'))._id;
    console.log(
      `activity fan-out bench (node ${process.version}, ${new Date().toISOString()}): ${SUBSCRIBERS} subscribers, ${CONNECTIONS} sockets, ${CHANGES} changes, clients in a worker thread`,
    );
    global.gc?.();
    console.log(`memory before subscribers: ${memory()}`);

    const setup: ClientsSetup = { url: platform.routerUrl!.replace(/^http/, 'ws'), key: created.key, projectId };
    worker = new Worker(__filename, { workerData: setup });
    let registered = 0;
    let errors = 0;
    const waiting = new Map<FromClients['type'], (m: FromClients) => void>();
    worker.on('message', (m: FromClients) => {
      if (m.type === 'seen') ({ registered, errors } = m);
      waiting.get(m.type)?.(m);
    });
    const reply = <T extends FromClients['type']>(type: T) =>
      new Promise<Extract<FromClients, { type: T }>>((resolve) =>
        waiting.set(type, (m) => resolve(m as Extract<FromClients, { type: T }>)),
      );

    const sentAt = new Map<string, number>();
    const change = async (measured: boolean) => {
      const opId = randomUUID();
      if (measured) sentAt.set(`operation:${opId}`, now());
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
    while (registered < SUBSCRIBERS && Date.now() - warmStart < WARMUP_MS) {
      await change(false);
      await sleep(1000);
    }
    console.log(`registered ${registered}/${SUBSCRIBERS} in ${((Date.now() - warmStart) / 1000).toFixed(1)} s; errors ${errors}`);
    global.gc?.();
    console.log(`memory with subscribers: ${memory()}`);

    for (let i = 0; i < CHANGES; i++) {
      await change(true);
      await sleep(GAP_MS);
    }
    const expected = registered * CHANGES;
    const deadline = Date.now() + 30_000;
    let latencies: number[] = [];
    for (;;) {
      const got = reply('latencies');
      worker.postMessage({ type: 'report', sentAt: [...sentAt] } satisfies ToClients);
      latencies = (await got).values;
      if (latencies.length >= expected || Date.now() > deadline) break;
      await sleep(200);
    }
    const s = [...latencies].sort((a, b) => a - b);
    console.log(
      `delivery latency: p50 ${pct(s, 50).toFixed(1)} ms, p99 ${pct(s, 99).toFixed(1)} ms, max ${s[s.length - 1].toFixed(1)} ms; delivered ${latencies.length}/${expected}`,
    );
    console.log(`memory after events: ${memory()}`);
    const closed = reply('closed');
    worker.postMessage({ type: 'close' } satisfies ToClients);
    await closed;
  } finally {
    await worker?.terminate();
    await bench.stop();
  }
}

if (isMainThread) {
  main().then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
} else {
  runClients(workerData as ClientsSetup);
}
