/**
 * Claim and compare-and-swap rates of the operation engine's collection at 1,000 and 50,000
 * operations, on the MongoDB-wire server behind MONGODB_URI (decision 0001: a filter other than
 * the exact keys of a unique index is a full scan under one lock; decision 0015). For each size it
 * fills a fresh database with terminal operations plus 200 due ones (bulk, untimed), in two
 * layouts: `hot` (every terminal operation still in `operations`, as before archiving) and
 * `archived` (they moved to `operations_archive`, as the engine's archiver does 10 min after they
 * end). It then measures for a bounded time each:
 *
 *   scan+claim   the engine's claim path: read due candidates (a filtered scan), claim one
 *   claim        OperationStore.claim alone (CAS on the unique index CLAIM_CAS_KEYS)
 *   cas:fenced   OperationStore.heartbeat (filter {_id, lease.owner, lease.token}, a unique index)
 *   cas:unique   an update whose filter is exactly a unique index ({_id, rev} on the idempotency keys)
 *
 *   npm run -s build && node dist/bench/operations-scale.js
 *   (BENCH_SIZES=1000,50000 BENCH_PHASE_MS=8000 BENCH_LAYOUTS=hot,archived)
 */
import { randomBytes } from 'node:crypto';
import mongoose from 'mongoose';
import { loadConfig } from '../core/config';
import { IdempotencyStore } from '../core/idempotency';
import { connectMongo, ensureIndexes } from '../core/mongo';
import { operationArchiveModel } from '../core/operations/archive';
import { operationModel, type OperationDoc } from '../core/operations/model';
import { OperationStore } from '../core/operations/store';

const SIZES = (process.env.BENCH_SIZES ?? '1000,50000').split(',').map(Number);
const PHASE_MS = Number(process.env.BENCH_PHASE_MS ?? 8000);
const DUE = 200;
const CONCURRENCY = 8;
const LAYOUTS = (process.env.BENCH_LAYOUTS ?? 'hot,archived').split(',');

function opDoc(i: number, status: 'completed' | 'pending', now: Date): OperationDoc {
  return {
    _id: `op-${i}-${randomBytes(4).toString('hex')}`,
    accountId: 'bench',
    projectId: `p-${i % 500}`,
    resourceType: 'site',
    resourceId: `s-${i % 500}`,
    operationType: 'bench',
    status,
    step: status === 'completed' ? 'completed' : 'queued',
    steps: [],
    input: null,
    result: null,
    errorCode: null,
    errorMessage: null,
    attempt: 0,
    maxAttempts: 3,
    runAfter: now,
    lease: { owner: null, token: 0, until: null },
    heartbeatAt: null,
    createdAt: now,
    updatedAt: now,
    startedAt: null,
    finishedAt: status === 'completed' ? now : null,
    deadlineAt: null,
    initiator: null,
    outbox: [],
  };
}

async function timed(label: string, size: string, fn: (i: number) => Promise<boolean>): Promise<void> {
  const end = performance.now() + PHASE_MS;
  let ops = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        if (await fn(next++)) ops++;
      }
    }),
  );
  const s = (performance.now() - started) / 1000;
  console.log(`${size.padStart(15)}  ${label.padEnd(11)} ${(ops / s).toFixed(1).padStart(8)} /s  (${ops} in ${s.toFixed(1)} s)`);
}

async function main(): Promise<void> {
  const base = loadConfig(process.env);
  console.log(
    `operations-scale on ${base.mongodbUri.replace(/\/\/[^@]*@/, '//')} (node ${process.version}, ${new Date().toISOString()})`,
  );
  for (const size of SIZES)
    for (const layout of LAYOUTS) {
      const tag = `${size} ${layout}`;
      const uri = base.mongodbUri.replace(/\/[^/?]*(\?|$)/, `/bench_ops_${randomBytes(3).toString('hex')}$1`);
      const conn = await connectMongo(uri);
      try {
        const model = operationModel(conn);
        const idem = new IdempotencyStore(conn);
        await ensureIndexes(conn);
        const now = new Date();
        for (let i = 0; i < size - DUE; i += 1000) {
          const batch = Array.from({ length: Math.min(1000, size - DUE - i) }, (_, j) => opDoc(i + j, 'completed', now));
          const target = layout === 'archived' ? operationArchiveModel(conn) : model;
          await target.collection.insertMany(batch as never[], { ordered: false });
        }
        const due = Array.from({ length: DUE }, (_, j) => opDoc(size + j, 'pending', now));
        await model.collection.insertMany(due as never[]);
        const keys = Array.from({ length: 200 }, (_, j) => ({ _id: `k${j}`, rev: 1 }));
        await idem.model.collection.insertMany(
          keys.map((k) => ({ ...k, requestHash: 'x', state: 'done', plan: {}, createdAt: now, expiresAt: now })) as never[],
        );
        for (let i = 0; i < size; i += 1000) {
          const filler = Array.from({ length: Math.min(1000, size - i) }, (_, j) => ({
            _id: `f${i + j}`,
            rev: 1,
            requestHash: 'x',
            state: 'done',
            plan: {},
            createdAt: now,
            expiresAt: now,
          }));
          await idem.model.collection.insertMany(filler as never[], { ordered: false });
        }

        const store = new OperationStore(model, 'bench');
        const owner = 'bench-worker';
        let claimed = 0;
        await timed('scan+claim', tag, async () => {
          const now = new Date(Date.now() + 10);
          const [c] = await store.candidates(['bench'], now, 16);
          return c ? (await store.claim(c, owner, 1, now)) !== null : false;
        });
        await timed('claim', tag, async (i) => {
          const c = due[i % DUE];
          const fresh = await model.findById(c._id).lean<OperationDoc>();
          if (!fresh) return false;
          // A 1 ms lease: by `now` (10 ms ahead) every earlier claim has lapsed, so each round re-claims.
          const got = await store.claim(fresh, owner, 1, new Date(Date.now() + 10));
          if (got) claimed++;
          return got !== null;
        });
        const held = await model.find({ 'lease.owner': owner }, { _id: 1, lease: 1 }).lean<OperationDoc[]>();
        await timed('cas:fenced', tag, async (i) => {
          const h = held[i % held.length];
          return store.heartbeat({ id: h._id, owner, token: h.lease.token }, 60_000);
        });
        const revs = new Map(keys.map((k) => [k._id, k.rev]));
        await timed('cas:unique', tag, async (i) => {
          const id = keys[i % keys.length]._id;
          const rev = revs.get(id)!;
          revs.set(id, rev + 1); // one worker per key at a time is not guaranteed: a lost race simply does not count
          const r = await idem.model.updateOne({ _id: id, rev }, { $set: { rev: rev + 1 } });
          return r.matchedCount === 1;
        });
        void claimed;
      } finally {
        await conn.dropDatabase().catch(() => undefined);
        await conn.close();
      }
    }
  await mongoose.disconnect();
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
