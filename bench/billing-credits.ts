/**
 * AI-credit figures, measured in one run on this machine (whole platform in-process, real engines):
 *   1. usage records per second through the `credits` port (what the areas call), N records at
 *      concurrency 1, 16 and 50 on ONE account (every draw contends on its balance document), and
 *      at concurrency 16 spread over 16 accounts;
 *   2. GET /api/v1/billing/ai-credits latency through the REST bridge (client in a worker thread)
 *      with BENCH_ENTRIES ledger entries (default 100,000) in the account's history; and, for
 *      comparison, the first page of GET /usage over the same history (it scans on the wire server).
 * Run: `npm run -s build && node dist/bench/billing-credits.js` (engines up: `npm run infra:up`).
 * Knobs: BENCH_USAGE (records per line, default 2000), BENCH_ENTRIES, BENCH_REQUESTS (default 2000).
 */
import 'reflect-metadata';
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { startPlatform } from '../app/platform';
import { loadConfig } from '../core/config';
import type { BillingService } from '../subgraphs/billing';

process.env.APOLLO_TELEMETRY_DISABLED = '1';
const USAGE = Number(process.env.BENCH_USAGE ?? 2000);
const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 100_000);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2000);

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

function get(agent: http.Agent, url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { headers, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Runs in a worker thread, so the load generator does not share the platform's event loop. */
async function measure(name: string, url: string, headers: Record<string, string>, concurrency: number, n: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  for (let i = 0; i < Math.min(100, n); i++) await get(agent, url, headers);
  const times: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        const t0 = performance.now();
        const status = await get(agent, url, headers);
        if (status !== 200) throw new Error(`${name}: HTTP ${status}`);
        times.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  times.sort((a, b) => a - b);
  const f = (x: number) => x.toFixed(2).padStart(7);
  return `${name.padEnd(22)} c=${String(concurrency).padEnd(3)} p50 ${f(pct(times, 50))} ms  p99 ${f(pct(times, 99))} ms  ${Math.round(n / elapsed)} req/s`;
}

function inWorker(name: string, url: string, headers: Record<string, string>, concurrency: number, n: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const w = new Worker(__filename, { workerData: { name, url, headers, concurrency, n } });
    w.once('message', resolve);
    w.once('error', reject);
  });
}

async function main(): Promise<void> {
  const id = randomBytes(4).toString('hex');
  const base = loadConfig(process.env);
  const config = loadConfig({
    ...process.env,
    LOG_LEVEL: 'warn',
    MONGODB_URI: base.mongodbUri.replace(/\/[^/?]*(\?|$)/, `/bench_${id}$1`),
  });
  const platform = await startPlatform({ config, bridgePort: 0, routerPort: 0, subgraphBasePort: 0, topicPrefix: `bench${id}` });
  const billing = platform.services.billing as BillingService;
  const port = platform.ports.get('credits');
  const account = async (slug: string) => {
    const created = await platform.services.identity.createApiKey({ accountSlug: slug, plan: 'pro' });
    // Enough credits that no draw of the run is refused.
    await billing.ledger.apply(
      created.accountId,
      'pro',
      { id: randomUUID(), kind: 'adjustment', credits: 1e9, delta: 1e9, source: 'bench' },
      false,
    );
    return created;
  };
  try {
    console.log(`AI-credit figures (node ${process.version}, ${new Date().toISOString()})`);
    const draw = (accountId: string, i: number) =>
      port.recordUsage({ accountId, product: 'assets', credits: 1, source: 'bench', idempotencyKey: `${i}-${randomUUID()}` });
    for (const concurrency of [1, 16, 50]) {
      const a = await account(`bench-${id}-c${concurrency}`);
      let next = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < USAGE) await draw(a.accountId, next++);
        }),
      );
      const s = (performance.now() - t0) / 1000;
      const b = await billing.ledger.balance(a.accountId);
      if (b.usedThisPeriod !== USAGE) throw new Error(`counted ${b.usedThisPeriod} of ${USAGE}`);
      console.log(
        `usage records, one account       c=${String(concurrency).padEnd(3)} ${Math.round(USAGE / s)} records/s (${USAGE} records, each counted once)`,
      );
    }
    const many = await Promise.all(Array.from({ length: 16 }, (_, i) => account(`bench-${id}-m${i}`)));
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      many.map(async (a) => {
        while (next < USAGE) await draw(a.accountId, next++);
      }),
    );
    console.log(`usage records, 16 accounts       c=16  ${Math.round(USAGE / ((performance.now() - t0) / 1000))} records/s`);

    const owner = await account(`bench-${id}-history`);
    const entries = billing.models.Entry.collection;
    const start = Date.now() - ENTRIES * 1000;
    // The seeded history takes the next ENTRIES positions of the account's ledger.
    const { revision } = await billing.ledger.head(owner.accountId);
    await billing.models.Balance.updateOne({ _id: owner.accountId }, { $inc: { revision: ENTRIES } });
    for (let i = 0; i < ENTRIES; i += 5000) {
      const batch = Array.from({ length: Math.min(5000, ENTRIES - i) }, (_, j) => ({
        _id: randomUUID(),
        accountId: owner.accountId,
        kind: 'usage',
        credits: 1,
        delta: 0,
        product: 'assets',
        funding: 'byok',
        source: 'bench.seed',
        description: null,
        period: new Date().toISOString().slice(0, 7),
        balanceAfter: null,
        seq: revision + 1 + i + j,
        createdAt: new Date(start + (i + j) * 1000),
      }));
      await entries.insertMany(batch as never[], { ordered: false });
    }
    console.log(`seeded ${await entries.countDocuments({})} ledger entries`);
    const headers = { authorization: `Bearer ${owner.key}` };
    for (const c of [1, 16]) {
      console.log(await inWorker('GET /ai-credits', `${platform.bridgeUrl}/api/v1/billing/ai-credits`, headers, c, REQUESTS));
    }
    for (const c of [1, 16]) {
      console.log(
        await inWorker('GET /usage (page 1)', `${platform.bridgeUrl}/api/v1/billing/ai-credits/usage`, headers, c, 500),
      );
    }
  } finally {
    await platform.conn.dropDatabase().catch(() => undefined);
    await platform.stop();
  }
  process.exit(0);
}

if (isMainThread) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
} else {
  const { name, url, headers, concurrency, n } = workerData as {
    name: string;
    url: string;
    headers: Record<string, string>;
    concurrency: number;
    n: number;
  };
  void measure(name, url, headers, concurrency, n).then((line) => parentPort!.postMessage(line));
}
