/**
 * Activity figures (docs/areas/activity.md), on the whole platform in one process against the real engines:
 *   1. fan-out: one operation's status change reaching BENCH_SUBSCRIBERS (1,000) graphql-ws
 *      subscriptions of its project (over BENCH_CONNECTIONS sockets, 100): p50/p99 from the write
 *      of the change to its arrival at each subscriber (outbox → Kafka → projection → Kafka → router).
 *   2. reads: GET /api/v1/projects/{id}/operation-activity over 10,000 history items, p50/p99 of
 *      the first page and of a deep page (cursor at item 5,000), BENCH_READS (200) each.
 * Run: `npm run -s build && node bin/platform.js infra up && node dist/bench/activity.js`.
 */
import 'reflect-metadata';
import { randomBytes, randomUUID } from 'node:crypto';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { startPlatform } from '../app/platform';
import { loadConfig } from '../core/config';
import { activityModels, type ActivityItemDoc } from '../subgraphs/activity/model';

process.env.APOLLO_TELEMETRY_DISABLED = '1';
const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 1000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 100);
const CHANGES = Number(process.env.BENCH_CHANGES ?? 20);
const READS = Number(process.env.BENCH_READS ?? 200);
const HISTORY = 10_000;

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const fmt = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `p50 ${pct(s, 50).toFixed(1)} ms, p99 ${pct(s, 99).toFixed(1)} ms (n=${s.length})`;
};

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
    const auth = { authorization: `Bearer ${created.key}` };
    console.log(`activity bench (node ${process.version}, ${new Date().toISOString()})`);

    // 1. Fan-out.
    const sentAt = new Map<string, number>();
    const latencies: number[] = [];
    for (let c = 0; c < CONNECTIONS; c++) {
      const client = createClient({
        url: platform.routerUrl!.replace(/^http/, 'ws'),
        webSocketImpl: WebSocket,
        connectionParams: auth,
        retryAttempts: 0,
      });
      clients.push(client);
    }
    for (let s = 0; s < SUBSCRIBERS; s++) {
      const client = clients[s % CONNECTIONS];
      client.subscribe(
        { query: 'subscription($p: ID!) { operationActivity(projectId: $p) }', variables: { p: projectId } },
        {
          next: (v) => {
            const item = (v.data as { operationActivity: { id: string } } | undefined)?.operationActivity;
            const t0 = item && sentAt.get(item.id);
            if (t0) latencies.push(performance.now() - t0);
          },
          error: () => undefined,
          complete: () => undefined,
        },
      );
    }
    // Let every subscription register (the router authorises each once).
    await new Promise((r) => setTimeout(r, 5000));
    for (let i = 0; i < CHANGES; i++) {
      const opId = randomUUID();
      sentAt.set(`operation:${opId}`, performance.now());
      // An operation type nobody executes: exactly one status change (queued) per enqueue.
      await platform.engine.enqueue({
        id: opId,
        accountId: created.accountId,
        projectId: projectId,
        resourceType: 'bench',
        resourceId: projectId,
        operationType: 'bench_noop',
      });
      await new Promise((r) => setTimeout(r, 500));
    }
    const deadline = Date.now() + 30_000;
    while (latencies.length < SUBSCRIBERS * CHANGES && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    console.log(
      `fan-out to ${SUBSCRIBERS} subscribers over ${CONNECTIONS} sockets, ${CHANGES} changes: ${fmt(latencies)}; delivered ${latencies.length}/${SUBSCRIBERS * CHANGES}`,
    );

    // 2. Reads over 10k history items (seeded straight into the read model).
    const { Item } = activityModels(platform.conn);
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    const docs: ActivityItemDoc[] = [];
    for (let i = 0; i < HISTORY; i++) {
      const at = new Date(t0 + i * 1000);
      const sid = randomUUID();
      docs.push({
        _id: `operation:${sid}`,
        sourceKind: 'operation',
        sourceId: sid,
        accountId: created.accountId,
        projectId: projectId,
        resourceType: 'site',
        resourceId: projectId,
        resourceKey: `site:${projectId}`,
        title: 'Restart site',
        type: 'restart',
        status: 'completed',
        sourceStatus: 'completed',
        step: 'completed',
        terminal: { outcome: 'succeeded', at: at.toISOString() },
        initiator: null,
        createdAt: at,
        startedAt: at,
        updatedAt: at,
        finishedAt: at,
        sortAt: at,
        current: false,
        version: at.getTime() * 10 + 3,
        extra: {},
      });
    }
    for (let i = 0; i < docs.length; i += 1000) await Item.insertMany(docs.slice(i, i + 1000), { ordered: false });
    const url = `${platform.bridgeUrl}/api/v1/projects/${projectId}/operation-activity`;
    let cursor: string | null = null;
    for (let page = 0; page < 50; page++) {
      const r = (await (
        await fetch(`${url}?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { headers: auth })
      ).json()) as { data: { history: { next_cursor: string | null } } };
      cursor = r.data.history.next_cursor;
    }
    for (const [name, target] of [
      ['first page', `${url}?limit=25`],
      ['deep page (item 5,000)', `${url}?limit=25&cursor=${encodeURIComponent(cursor!)}`],
    ] as const) {
      const times: number[] = [];
      for (let i = 0; i < READS; i++) {
        const s = performance.now();
        const res = await fetch(target, { headers: auth });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`read ${res.status}`);
        times.push(performance.now() - s);
      }
      console.log(`collection read, ${HISTORY} history items, ${name}: ${fmt(times)}`);
    }
  } finally {
    await Promise.all(clients.map((c) => c.dispose()));
    await platform.conn.dropDatabase().catch(() => undefined);
    await platform.stop();
  }
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
