/**
 * Kill trials: replicas and brokers killed with `kill -9` while work is under way, then counted.
 * Prints figures (lost, doubled, time to recover); exits 1 when anything was lost or doubled.
 *
 *   creates    `--trials` (50) trials: concurrent creates of upload sessions, each key sent by two
 *              clients at once with the same Idempotency-Key through the bridges' round-robin, while
 *              a random replica (bridge, router or assets subgraph) is killed → one session per key
 *   broker     `--events` (10,000) object events published to a three-broker cluster (started on
 *              19092… if it is not running) with one broker killed a third of the way → every event
 *              reaches a pull subscription and a push receiver at least once; copies only by event id
 *   operation  a bulk job (an operation of many steps) whose worker replica is killed mid-run →
 *              another replica claims it when the lease lapses and finishes it, each item applied once
 *
 * Run: `npm run trials` (full counts) or `npm run trials -- --trials 5 --events 1000` (quick);
 * `--parts creates,broker,operation` picks parts. Uses MONGODB_URI / the local MongoDB-wire server and
 * KAFKA_BROKERS / the local broker for `creates` and `operation`, each run in its own database and
 * topic prefix; never stops the engines it did not start (docs/decisions/0200-replicas-and-kafka-cluster.md).
 */
import 'reflect-metadata';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import os from 'node:os';
import { parseArgs } from 'node:util';
import mongoose from 'mongoose';
import { startPlatform } from '../app/platform';
import { type Replica, type ReplicaSet, startReplicas } from '../app/replicas';
import { loadConfig } from '../core/config';
import { OBJECT_EVENTS_TOPIC, type ObjectEvent } from '../core/events/object-events';
import type { Principal } from '../core/principal';
import { DEFAULT_CLUSTER_BASE_PORT, clusterNodePid, kafkaClusterUp, startClusterNode } from '../infra/kafka-cluster';
import type { ObjstoreService } from '../subgraphs/objstore/service';
import { TRIALS_HEADING, writeTrialsSection } from './doc-sections';

process.env.APOLLO_TELEMETRY_DISABLED = '1';
// The trial's own platform logs only what is fatal (a killed broker makes every client complain);
// the replicas log at warn into <DATA_DIR>/logs/replicas/.
process.env.LOG_LEVEL ??= 'fatal';

const { values: args } = parseArgs({
  options: {
    trials: { type: 'string', default: '50' },
    events: { type: 'string', default: '10000' },
    keys: { type: 'string', default: '5' },
    parts: { type: 'string', default: 'creates,broker,operation' },
    'bulk-items': { type: 'string', default: '10000' },
  },
});
const TRIALS = Number(args.trials);
const EVENTS = Number(args.events);
const KEYS = Number(args.keys);
const PARTS = args.parts!.split(',');
const BULK_ITEMS = Number(args['bulk-items']);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const ms = (x: number) => `${Math.round(x)} ms`;
/** Everything printed, kept for the trials section of docs/benchmarks.md. */
const printed: string[] = [];
const line = (s: string) => {
  printed.push(s);
  process.stdout.write(`${s}\n`);
};

/** Figures of each part; the run fails when any part lost or doubled anything. */
const verdicts: { part: string; lost: number; doubled: number }[] = [];

/** The environment of one isolated run: its own database and topic prefix on the configured engines. */
function runEnv(label: string, extra: Record<string, string> = {}): { env: NodeJS.ProcessEnv; id: string; uri: string } {
  const id = randomBytes(4).toString('hex');
  const base = loadConfig(process.env);
  const uri = base.mongodbUri.replace(/\/[^/?]*(\?|$)/, `/trials_${label}_${id}$1`);
  return {
    id,
    uri,
    env: {
      ...process.env,
      MONGODB_URI: uri,
      KAFKA_BROKERS: base.kafkaBrokers.join(','),
      KAFKA_TOPIC_PREFIX: `tr${label}${id}`,
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_MINUTE: '1000000',
      ...extra,
    },
  };
}

/** An API key made the way `platform keys create` makes one, in the run's database. */
async function apiKey(env: NodeJS.ProcessEnv, account: string): Promise<{ key: string; accountId: string }> {
  const out = await new Promise<string>((resolve, reject) => {
    const c = spawn(process.execPath, ['bin/platform.js', 'keys', 'create', '--account', account, '--plan', 'pro', '--json'], {
      env,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let text = '';
    c.stdout.on('data', (d) => (text += d));
    c.once('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`keys create exited with ${code}`))));
  });
  const parsed = JSON.parse(out.trim().split('\n').pop()!) as { key: string; account_id: string };
  return { key: parsed.key, accountId: parsed.account_id };
}

function post(
  url: string,
  key: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const data = Buffer.from(JSON.stringify(body));
    const req = http.request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'content-length': data.length,
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => {
          let json: unknown = null;
          try {
            json = JSON.parse(text);
          } catch {
            /* not JSON */
          }
          resolve({ status: res.statusCode ?? 0, json });
        });
        res.on('error', reject);
      },
    );
    req.setTimeout(60_000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(data);
  });
}

const killed = (r: Replica) => {
  const pid = r.pid();
  if (pid) process.kill(pid, 'SIGKILL');
  return pid;
};

// ---------------------------------------------------------------------------------------------
async function creates(): Promise<void> {
  line(`\n== creates: ${TRIALS} trials, ${KEYS} keys × 2 clients each, kill -9 of a random replica`);
  const { env, uri } = runEnv('c');
  const cfg = loadConfig(env);
  const conn = await mongoose.createConnection(uri).asPromise();
  let set: ReplicaSet | undefined;
  try {
    const t0 = Date.now();
    set = await startReplicas({
      plan: { bridges: 2, routers: 2, subgraphs: 2, only: ['assets'] },
      config: cfg,
      env,
      bridgePort: 0,
      routerPort: 0,
      subgraphBasePort: 0,
      cdnPort: 0,
    });
    running.add(set);
    line(`   6 replicas up in ${ms(Date.now() - t0)} (2 bridges, 2 routers, 2 assets subgraphs)`);
    const { key, accountId } = await apiKey(env, 'trials');
    const url = `${set.bridgeUrl}/api/v1/assets/upload-sessions`;
    let lost = 0;
    let doubled = 0;
    let mismatched = 0;
    let retries = 0;
    const settle: number[] = [];
    const back: number[] = [];
    const byRole: Record<string, number> = {};
    const returning = new Set<Replica>();
    const comebacks: Promise<void>[] = [];
    for (let t = 0; t < TRIALS; t++) {
      const keys = Array.from({ length: KEYS }, () => `trial-${t}-${randomUUID()}`);
      let killAt = 0;
      const client = async (k: string) => {
        for (let attempt = 0; ; attempt++) {
          try {
            const r = await post(url, key, { file_name: `${k}.txt`, file_size: 10 }, { 'Idempotency-Key': k });
            if (r.status === 200 || r.status === 201) return { id: r.json.data.upload_session_id as string, at: Date.now() };
            if (r.status >= 500 || r.status === 409 || r.status === 429) {
              retries++;
            } else throw new Error(`create answered ${r.status}: ${JSON.stringify(r.json)}`);
          } catch (e) {
            if (attempt > 200) throw e;
            retries++;
          }
          await sleep(50 + Math.random() * 100);
        }
      };
      // A random replica among those whose role still has another one running (a killed replica
      // comes back in the background; with none to spare, wait for one).
      const group = (r: Replica) => (r.role.kind === 'subgraph' ? `subgraph:${r.role.name}` : r.role.kind);
      let candidates: Replica[] = [];
      for (;;) {
        const alive = set.replicas.filter((r) => r.pid() !== undefined && !returning.has(r));
        candidates = alive.filter((r) => alive.some((o) => o !== r && group(o) === group(r)));
        if (candidates.length > 0) break;
        await sleep(200);
      }
      const victim = candidates[Math.floor(Math.random() * candidates.length)];
      const running = keys.flatMap((k) => [client(k), client(k)]);
      await sleep(Math.random() * 60);
      killed(victim);
      killAt = Date.now();
      byRole[victim.role.kind] = (byRole[victim.role.kind] ?? 0) + 1;
      const results = await Promise.all(running);
      settle.push(Math.max(0, Math.max(...results.map((r) => r.at)) - killAt));
      for (let i = 0; i < keys.length; i++) if (results[2 * i].id !== results[2 * i + 1].id) mismatched++;
      const counts = await conn
        .collection('asset_upload_sessions')
        .aggregate<{ _id: string; n: number }>([
          { $match: { idempotencyScope: { $in: keys.map((k) => `${accountId}:${k}`) } } },
          { $group: { _id: '$idempotencyScope', n: { $sum: 1 } } },
        ])
        .toArray();
      const seen = new Map(counts.map((c) => [c._id, c.n]));
      for (const k of keys) {
        const n = seen.get(`${accountId}:${k}`) ?? 0;
        if (n === 0) lost++;
        if (n > 1) doubled += n - 1;
      }
      // The killed replica is started again by its supervisor, in the background.
      returning.add(victim);
      comebacks.push(
        (async () => {
          while (victim.pid() === undefined) await sleep(50);
          await victim.ready(300_000);
          back.push(Date.now() - killAt);
          returning.delete(victim);
        })(),
      );
    }
    await Promise.all(comebacks);
    line(
      `   kills: ${Object.entries(byRole)
        .map(([r, n]) => `${r} ${n}`)
        .join(
          ', ',
        )}; front re-routes ${set.fronts.reduce((s, f) => s + f.counts.rerouted, 0)}, 502s ${set.fronts.reduce((s, f) => s + f.counts.failed, 0)}, client retries ${retries}`,
    );
    line(
      `   keys ${TRIALS * KEYS}: lost ${lost}, doubled ${doubled}, two clients of one key given different sessions ${mismatched}`,
    );
    line(
      `   time to recover: every create answered p50 ${ms(pct(settle, 50))}, p99 ${ms(pct(settle, 99))}, max ${ms(Math.max(...settle))} after the kill; killed replica serving again p50 ${ms(pct(back, 50))}, max ${ms(Math.max(...back))}`,
    );
    verdicts.push({ part: 'creates', lost, doubled: doubled + mismatched });
  } finally {
    if (set) running.delete(set);
    await set?.stop();
    await conn.dropDatabase().catch(() => undefined);
    await conn.close();
  }
}

// ---------------------------------------------------------------------------------------------
const RECEIVER_SRC = `
const http = require('node:http');
const seen = new Map();
http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    try { const id = JSON.parse(body).id; seen.set(id, (seen.get(id) || 0) + 1); } catch {}
    res.writeHead(200); res.end('ok');
  });
}).listen(0, '127.0.0.1', function () { process.send({ port: this.address().port }); });
process.on('message', () => process.send({ counts: [...seen] }));
`;

function objectEvent(accountId: string, bucketId: string): ObjectEvent {
  return {
    event_id: randomUUID(),
    type: 'object.created',
    account_id: accountId,
    bucket_id: bucketId,
    key: `trial/${randomBytes(6).toString('hex')}`,
    asset_id: randomUUID(),
    version: 1,
    size: 100,
    content_type: 'application/octet-stream',
    sha256: null,
    occurred_at: new Date().toISOString(),
  };
}

async function broker(): Promise<void> {
  line(`\n== broker: ${EVENTS} object events on a three-broker cluster, one broker killed with kill -9`);
  const cluster = { nodes: 3, basePort: DEFAULT_CLUSTER_BASE_PORT };
  const brokers = await kafkaClusterUp(cluster);
  const { env, id } = runEnv('b', {
    KAFKA_BROKERS: brokers.join(','),
    OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
    OBJSTORE_PUSH_POLL_MS: '50',
  });
  const config = loadConfig(env);
  const prefix = `tb${id}`;
  const platform = await startPlatform({
    config,
    bridgePort: 0,
    routerPort: 0,
    cdnPort: 0,
    edgePort: 0,
    serveSubgraphs: false,
    topicPrefix: prefix,
  });
  const receiver: ChildProcess = spawn(process.execPath, ['-e', RECEIVER_SRC], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let victim = 0;
  try {
    const svc = platform.services.objstore as ObjstoreService;
    const topic = `${prefix}.${OBJECT_EVENTS_TOPIC}`;
    const { key: _key, accountId } = await platform.services.identity.createApiKey({ accountSlug: `trials-${id}`, plan: 'pro' });
    void _key;
    const principal: Principal = {
      accountId,
      accountSlug: `trials-${id}`,
      plan: 'pro',
      keyId: 'trials',
      role: 'owner',
      scopes: [],
    };
    const port = await new Promise<number>((r) => receiver.once('message', (m: any) => r(m.port)));
    const bucketId = randomUUID();
    await platform.bus.publish([{ topic, key: bucketId, value: objectEvent(accountId, bucketId) }]);
    while (!(await svc.models.BucketFact.findById(bucketId).lean())) await sleep(50);
    const pullSub = await svc.subscriptions.create(principal, bucketId, {});
    const pushSub = await svc.subscriptions.create(principal, bucketId, {
      deliveryMode: 'push',
      url: `http://127.0.0.1:${port}/in`,
    });

    const sent = new Set<string>();
    let publishRetries = 0;
    let stall = 0;
    const batch = 100;
    const t0 = Date.now();
    let killAt = 0;
    for (let i = 0; i < EVENTS; i += batch) {
      if (!killAt && i >= EVENTS / 3) {
        victim = 1 + Math.floor(Math.random() * 3);
        const pid = clusterNodePid(cluster, victim);
        if (pid) process.kill(pid, 'SIGKILL');
        killAt = Date.now();
        line(`   killed broker node ${victim} (pid ${pid}) after ${i} events`);
      }
      const events = Array.from({ length: Math.min(batch, EVENTS - i) }, () => objectEvent(accountId, bucketId));
      const b0 = Date.now();
      // At least once: a publish that fails is sent again whole (copies carry the same event id).
      for (;;) {
        try {
          await platform.bus.publish(events.map((e) => ({ topic, key: bucketId, value: e })));
          break;
        } catch {
          publishRetries++;
          await sleep(200);
        }
      }
      stall = Math.max(stall, Date.now() - b0);
      for (const e of events) sent.add(e.event_id);
    }
    const published = Date.now() - t0;
    line(`   published ${sent.size} events in ${ms(published)}; publish retries ${publishRetries}, longest publish ${ms(stall)}`);

    // Ten pull consumers at once until every event arrived (or nothing new for 60 s).
    const pulled = new Map<string, number>();
    let last = Date.now();
    const pushCounts = async () =>
      new Map(
        await new Promise<[string, number][]>((r) => {
          receiver.once('message', (m: any) => r(m.counts));
          receiver.send('counts');
        }),
      );
    let pushed = new Map<string, number>();
    let finished = false;
    const consumer = async () => {
      while (!finished && Date.now() - last < 60_000) {
        const items = await svc.pull.pull(principal, bucketId, pullSub.id, 50);
        for (const d of items) pulled.set(d.eventId, (pulled.get(d.eventId) ?? 0) + 1);
        await Promise.all(
          items.map((d) => svc.pull.ack(principal, bucketId, d.id, { claimId: d.claimId }).catch(() => undefined)),
        );
        if (items.length > 0) last = Date.now();
        else await sleep(200);
      }
    };
    const watcher = async () => {
      while (!finished && Date.now() - last < 60_000) {
        pushed = await pushCounts();
        if ([...sent].every((e) => pulled.has(e) && pushed.has(e))) finished = true;
        else await sleep(500);
      }
      finished = true;
    };
    await Promise.all([watcher(), ...Array.from({ length: 10 }, consumer)]);
    pushed = await pushCounts();
    const delivered = Date.now() - t0;
    const lostPull = [...sent].filter((e) => !pulled.has(e)).length;
    const lostPush = [...sent].filter((e) => !pushed.has(e)).length;
    const copies = (m: Map<string, number>) => [...m.values()].reduce((s, n) => s + Math.max(0, n - 1), 0);
    const strangers = [...pulled.keys(), ...pushed.keys()].filter((e) => !sent.has(e)).length - 1; // the first event made the bucket known
    const deliveryDocs = await svc.models.Delivery.countDocuments({ subscriptionId: { $in: [pullSub.id, pushSub.id] } });
    line(
      `   pull: ${pulled.size}/${sent.size} events, lost ${lostPull}, copies by event id ${copies(pulled)}; push: ${pushed.size}/${sent.size}, lost ${lostPush}, copies by event id ${copies(pushed)}`,
    );
    line(
      `   delivery records ${deliveryDocs} for ${sent.size * 2} (event, subscription) pairs; events never sent ${Math.max(0, strangers)}; all delivered ${ms(delivered)} after the first publish`,
    );
    line(`   time to recover: the publish that met the dead broker took ${ms(stall)} (leader moves to an in-sync replica)`);
    verdicts.push({ part: 'broker', lost: lostPull + lostPush, doubled: Math.max(0, deliveryDocs - sent.size * 2) });
  } finally {
    receiver.kill();
    await platform.conn.dropDatabase().catch(() => undefined);
    await platform.stop();
    // Leave the cluster whole for the next run.
    if (victim) {
      const s = await startClusterNode(cluster, victim);
      if (s.started) await kafkaClusterUp(cluster);
    }
  }
}

// ---------------------------------------------------------------------------------------------
async function operation(): Promise<void> {
  line(`\n== operation: a bulk job of ${BULK_ITEMS} items; the replica running it is killed mid-run`);
  const { env, uri } = runEnv('o', { OPERATION_LEASE_MS: '3000' });
  const cfg = loadConfig(env);
  const conn = await mongoose.createConnection(uri).asPromise();
  let set: ReplicaSet | undefined;
  try {
    set = await startReplicas({
      plan: { bridges: 1, routers: 1, subgraphs: 2, only: ['assets'] },
      config: cfg,
      env,
      bridgePort: 0,
      routerPort: 0,
      subgraphBasePort: 0,
      cdnPort: 0,
      // The killed replica stays down: the job must finish on the other one.
      respawnMs: null,
    });
    running.add(set);
    const { key } = await apiKey(env, 'trials-op');
    const items = Array.from({ length: BULK_ITEMS }, () => ({
      asset_id: randomUUID(),
      revision: 1,
      action: 'add_tags',
      tags: ['t'],
    }));
    const r = await post(`${set.bridgeUrl}/api/v1/assets/bulk`, key, { items });
    if (r.status !== 202) throw new Error(`bulk answered ${r.status}: ${JSON.stringify(r.json)}`);
    const jobId = r.json.data.job_id as string;
    const ops = conn.collection<{ _id: string; status: string; lease?: { owner?: string | null } }>('operations');
    const jobs = conn.collection<{
      _id: string;
      status: string;
      total: number;
      succeeded: number;
      failed: number;
      chunksDone: number;
    }>('asset_bulk_jobs');
    // Wait until a replica holds the operation and has done part of it, then kill that replica.
    let owner: string | null | undefined;
    for (;;) {
      const op = await ops.findOne({ _id: jobId });
      const job = await jobs.findOne({ _id: jobId });
      owner = op?.lease?.owner;
      if (op?.status === 'running' && owner && (job?.chunksDone ?? 0) >= 1) break;
      if (op && ['completed', 'failed'].includes(op.status))
        throw new Error('the job finished before a replica could be killed; raise --bulk-items');
      await sleep(20);
    }
    const pid = Number(owner!.split(':')[1]);
    const victim = set.replicas.find((x) => x.pid() === pid);
    if (!victim) throw new Error(`no replica runs the operation's owner ${owner}`);
    const before = (await jobs.findOne({ _id: jobId }))!;
    process.kill(pid, 'SIGKILL');
    const killAt = Date.now();
    line(`   killed ${victim.label} (pid ${pid}) at ${before.chunksDone} chunk(s) done`);
    let reclaimed = 0;
    let status = '';
    while (Date.now() - killAt < 300_000) {
      const op = await ops.findOne({ _id: jobId });
      if (!reclaimed && op?.lease?.owner && op.lease.owner !== owner) reclaimed = Date.now() - killAt;
      status = op?.status ?? '';
      if (status === 'completed' || status === 'failed') break;
      await sleep(100);
    }
    const done = Date.now() - killAt;
    const job = (await jobs.findOne({ _id: jobId }))!;
    const finalOp = await ops.findOne({ _id: jobId });
    const archived = finalOp ? null : await conn.collection('operations_archive').findOne({ _id: jobId as never });
    const results = await conn
      .collection('asset_bulk_chunks')
      .aggregate<{ n: number }>([
        { $match: { jobId } },
        { $project: { n: { $size: '$results' } } },
        { $group: { _id: null, n: { $sum: '$n' } } },
      ])
      .toArray();
    const applied = results[0]?.n ?? 0;
    line(
      `   operation ${status || archived?.status} on another replica: claimed again ${ms(reclaimed)} after the kill (lease 3 s), finished ${ms(done)} after it`,
    );
    line(
      `   items ${job.total}: results ${applied}, succeeded ${job.succeeded} + failed ${job.failed} = ${job.succeeded + job.failed}; lost ${Math.max(0, job.total - applied)}, doubled ${Math.max(0, applied - job.total)}`,
    );
    verdicts.push({
      part: 'operation',
      lost: status === 'completed' ? Math.max(0, job.total - applied) : job.total,
      doubled: Math.max(0, applied - job.total, job.succeeded + job.failed - job.total),
    });
  } finally {
    if (set) running.delete(set);
    await set?.stop();
    await conn.dropDatabase().catch(() => undefined);
    await conn.close();
  }
}

/** Replica sets running now: stopped (children and all) when the run is interrupted. */
const running = new Set<ReplicaSet>();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void Promise.all([...running].map((r) => r.stop())).finally(() => process.exit(130));
  });
}

async function main(): Promise<void> {
  const t0 = Date.now();
  if (PARTS.includes('creates')) await creates();
  if (PARTS.includes('operation')) await operation();
  if (PARTS.includes('broker')) await broker();
  line(`\n== summary (${ms(Date.now() - t0)})`);
  for (const v of verdicts) line(`   ${v.part.padEnd(10)} lost ${v.lost}, doubled ${v.doubled}`);
  if (verdicts.some((v) => v.lost > 0 || v.doubled > 0)) process.exitCode = 1;
  // A full run (every part at its full count) is what the page reports; quick runs only print.
  const full = TRIALS >= 50 && EVENTS >= 10_000 && PARTS.length === 3;
  if (full || process.env.TRIALS_WRITE === '1') {
    await writeTrialsSection(
      [
        TRIALS_HEADING,
        '',
        `Written by \`npm run trials\` (bench/trials.ts) on ${new Date().toISOString()}, whole run ${((Date.now() - t0) / 60_000).toFixed(1)} min,`,
        `exit ${process.exitCode ?? 0}; ${os.cpus().length} cores, load average ${os
          .loadavg()
          .map((l) => l.toFixed(1))
          .join(' ')} at the end.`,
        'What each part does and why it counts what it counts: docs/decisions/0200-replicas-and-kafka-cluster.md (the bulk',
        "job's items name assets that do not exist, so each fails once: what counts is one result per item).",
        '',
        '```',
        ...printed.join('\n').trim().split('\n'),
        '```',
      ].join('\n'),
    );
    line('wrote the trials section of docs/benchmarks.md');
  }
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
