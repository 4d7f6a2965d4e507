/**
 * Object-store events figures, on the project's engines (real Kafka, MongoDB-wire server):
 *   latency  object event published on `${prefix}.assets.objects` → delivery returned to a waiting
 *            pull consumer (GET …/deliveries through the REST bridge), p50/p99, at 100 and 500 events/s
 *   fanout   the Kafka consumer's own cost per object event (no Kafka): ms per event
 *   push     signed pushes per second to a local receiver running in a child process
 *   claims   claims per second with 20 concurrent consumers and BENCH_PENDING (50,000) pending deliveries
 * Run: `npm run -s build && node dist/bench/objstore-delivery.js` (BENCH_PARTS=latency,fanout,push,claims;
 * BENCH_SECONDS per latency rate, default 10; BENCH_PUSHES default 5000).
 */
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import { startPlatform } from '../app/platform';
import { loadConfig } from '../core/config';
import { OBJECT_EVENTS_TOPIC, type ObjectEvent } from '../core/events/object-events';
import type { Principal } from '../core/principal';
import type { DeliveryDoc } from '../subgraphs/objstore/model';
import type { ObjstoreService } from '../subgraphs/objstore/service';

process.env.APOLLO_TELEMETRY_DISABLED = '1';
const PARTS = (process.env.BENCH_PARTS ?? 'latency,push,claims').split(',');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const PUSHES = Number(process.env.BENCH_PUSHES ?? 5000);
const PENDING = Number(process.env.BENCH_PENDING ?? 50_000);

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

function event(accountId: string, bucketId: string): ObjectEvent {
  return {
    event_id: randomUUID(),
    type: 'object.created',
    account_id: accountId,
    bucket_id: bucketId,
    key: `bench/${randomBytes(6).toString('hex')}`,
    asset_id: randomUUID(),
    version: 1,
    size: 100,
    content_type: 'application/octet-stream',
    sha256: null,
    occurred_at: new Date().toISOString(),
  };
}

/** The receiver runs in its own process, so its CPU is not the platform's. */
const RECEIVER_SRC = `
const http = require('node:http');
let n = 0;
http.createServer((req, res) => { req.resume(); req.on('end', () => { n++; res.writeHead(200); res.end('ok'); }); })
  .listen(0, '127.0.0.1', function () { process.send({ port: this.address().port }); });
process.on('message', () => process.send({ count: n }));
`;

async function main() {
  const id = randomBytes(4).toString('hex');
  const base = loadConfig(process.env);
  const config = loadConfig({
    ...process.env,
    MONGODB_URI: base.mongodbUri.replace(/\/[^/?]*(\?|$)/, `/bench_objstore_${id}$1`),
    KAFKA_BROKERS: base.kafkaBrokers.join(','),
    OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
    OBJSTORE_PUSH_POLL_MS: '50',
    LOG_LEVEL: 'warn',
  });
  const platform = await startPlatform({ config, bridgePort: 0, routerPort: 0, serveSubgraphs: false, topicPrefix: `b${id}` });
  const svc = platform.services.objstore as ObjstoreService;
  const topic = `b${id}.${OBJECT_EVENTS_TOPIC}`;
  const { key, accountId } = await platform.services.identity.createApiKey({ accountSlug: `bench-${id}`, plan: 'pro' });
  const principal: Principal = { accountId, accountSlug: `bench-${id}`, plan: 'pro', keyId: 'bench', role: 'owner', scopes: [] };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

  async function bucketWith(body: Record<string, unknown>) {
    const bucketId = randomUUID();
    await platform.bus.publish([{ topic, key: bucketId, value: event(accountId, bucketId) }]);
    while (!(await svc.models.BucketFact.findById(bucketId).lean())) await new Promise((r) => setTimeout(r, 50));
    const sub = await svc.subscriptions.create(principal, bucketId, body);
    return { bucketId, sub };
  }

  const pullHttp = (bucketId: string, subId: string) =>
    new Promise<{ items: { event_id: string }[] }>((resolve, reject) => {
      const req = http.request(
        `${platform.bridgeUrl}/api/v1/buckets/${bucketId}/event-subscriptions/${subId}/deliveries?limit=100`,
        { headers: { authorization: `Bearer ${key}` }, agent },
        (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve(JSON.parse(body).data));
        },
      );
      req.on('error', reject);
      req.end();
    });

  try {
    if (PARTS.includes('latency')) {
      for (const rate of [100, 500]) {
        const { bucketId, sub } = await bucketWith({});
        const sentAt = new Map<string, number>();
        const lat: number[] = [];
        let done = false;
        let lastSend = performance.now();
        const consumer = (async () => {
          while (!done || lat.length < sentAt.size) {
            const batch = await pullHttp(bucketId, sub.id);
            const now = performance.now();
            for (const d of batch.items) lat.push(now - sentAt.get(d.event_id)!);
            if (batch.items.length === 0) await new Promise((r) => setTimeout(r, 50));
            if (done && performance.now() - lastSend > 15_000) break;
          }
        })();
        const total = rate * SECONDS;
        const start = performance.now();
        // Publish in 10 ms ticks, as uploads arrive.
        for (let i = 0; i < total;) {
          const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * rate));
          const batch: ObjectEvent[] = [];
          for (; i < due; i++) batch.push(event(accountId, bucketId));
          if (batch.length) {
            const t0 = performance.now();
            for (const e of batch) sentAt.set(e.event_id, t0);
            await platform.bus.publish(batch.map((e) => ({ topic, key: bucketId, value: e })));
            lastSend = performance.now();
          }
          await new Promise((r) => setTimeout(r, 10));
        }
        done = true;
        await consumer;
        console.log(
          `latency @${rate}/s: ${lat.length}/${total} events, p50 ${pct(lat, 50).toFixed(1)} ms, p99 ${pct(lat, 99).toFixed(1)} ms, max ${Math.max(...lat).toFixed(1)} ms`,
        );
      }
    }

    if (PARTS.includes('fanout')) {
      // The consumer's own cost per event, without Kafka: where the latency goes.
      const { bucketId } = await bucketWith({});
      const n = 300;
      const t0 = performance.now();
      for (let i = 0; i < n; i++) await svc.fanout.handle(event(accountId, bucketId));
      const ms = (performance.now() - t0) / n;
      const r0 = performance.now();
      for (let i = 0; i < 100; i++) await svc.models.Subscription.findById(randomUUID()).lean();
      console.log(
        `fanout: ${ms.toFixed(1)} ms per event (${(1000 / ms).toFixed(0)} events/s, one subscription); a point read ${((performance.now() - r0) / 100).toFixed(1)} ms`,
      );
    }

    if (PARTS.includes('push')) {
      const child = spawn(process.execPath, ['-e', RECEIVER_SRC], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      const port = await new Promise<number>((r) => child.once('message', (m: any) => r(m.port)));
      const count = () =>
        new Promise<number>((r) => {
          child.once('message', (m: any) => r(m.count));
          child.send('count');
        });
      const { bucketId, sub } = await bucketWith({ deliveryMode: 'push', url: `http://127.0.0.1:${port}/in` });
      // Queue the deliveries first (fan-out is measured by the latency part), then time the sends.
      await svc.push.stop();
      const now = new Date();
      const docs: DeliveryDoc[] = Array.from({ length: PUSHES }, () => {
        const e = event(accountId, bucketId);
        return {
          _id: randomUUID(),
          subscriptionId: sub.id,
          accountId,
          bucketId,
          deliveryMode: 'push',
          eventId: e.event_id,
          eventType: e.type,
          data: { key: e.key },
          status: 'pending',
          visibleAt: now,
          claimSeq: 0,
          claimId: null,
          claimExpiresAt: null,
          claimCount: 0,
          failures: 0,
          attempts: [],
          completedAt: null,
          createdAt: now,
          updatedAt: now,
        };
      });
      for (let i = 0; i < docs.length; i += 1000) await svc.models.Delivery.insertMany(docs.slice(i, i + 1000));
      const t0 = performance.now();
      await svc.push.drain();
      const secs = (performance.now() - t0) / 1000;
      const got = await count();
      console.log(
        `push: ${got} signed pushes in ${secs.toFixed(1)} s = ${(got / secs).toFixed(0)}/s (receiver in its own process)`,
      );
      child.kill();
    }

    if (PARTS.includes('claims')) {
      const { bucketId, sub } = await bucketWith({});
      const now = new Date(Date.now() - 1000);
      const t0 = performance.now();
      for (let i = 0; i < PENDING; i += 2000) {
        const docs: DeliveryDoc[] = Array.from({ length: Math.min(2000, PENDING - i) }, () => ({
          _id: randomUUID(),
          subscriptionId: sub.id,
          accountId,
          bucketId,
          deliveryMode: 'pull',
          eventId: randomUUID(),
          eventType: 'object.created',
          data: {},
          status: 'available',
          visibleAt: now,
          claimSeq: 0,
          claimId: null,
          claimExpiresAt: null,
          claimCount: 0,
          failures: 0,
          attempts: [],
          completedAt: null,
          createdAt: now,
          updatedAt: now,
        }));
        await svc.models.Delivery.insertMany(docs);
      }
      console.log(`claims: ${PENDING} pending deliveries inserted in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      const seen = new Set<string>();
      let dup = 0;
      let claims = 0;
      const until = performance.now() + SECONDS * 1000;
      const start = performance.now();
      await Promise.all(
        Array.from({ length: 20 }, async () => {
          while (performance.now() < until) {
            const batch = await svc.pull.pull(principal, bucketId, sub.id, 10);
            for (const d of batch) {
              if (seen.has(d.id)) dup++;
              seen.add(d.id);
            }
            claims += batch.length;
          }
        }),
      );
      const secs = (performance.now() - start) / 1000;
      console.log(
        `claims: 20 consumers, batch 10: ${claims} claims in ${secs.toFixed(1)} s = ${(claims / secs).toFixed(0)}/s, duplicates ${dup}`,
      );
    }
  } finally {
    await platform.conn.dropDatabase().catch(() => undefined);
    await platform.stop();
    agent.destroy();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
