/**
 * Throughput of the MongoDB-wire server behind MONGODB_URI, through mongoose (the code's own path).
 *
 *   npx tsc -p tsconfig.build.json && MONGODB_URI=mongodb://127.0.0.1:27017/platform node dist/bench/mongo-wire-throughput.js
 *
 * BENCH_EXTRA_DOCS=18000 grows the collection (untimed) to 20,000 documents before the read and
 * update phases, which shows whether the server scans for a filter.
 *
 * Bounded: each phase stops after its op count or PHASE_LIMIT_MS, whichever comes first, and the
 * whole run after RUN_LIMIT_MS. Works in one collection `bench_<random>` and drops it at the end.
 * Prints plain lines such as `insert: 1234 ops/s`. Figures per candidate server are in
 * docs/decisions/0001-mongodb-wire-server.md.
 */
import { randomBytes } from 'node:crypto';
import mongoose, { Schema } from 'mongoose';

const MONGODB_URI = process.env.MONGODB_URI ?? 'mongodb://127.0.0.1:27017/platform';
const CONCURRENCY = 16;
const DOCS = 2000;
const READS = 4000;
const CAS_UPDATES = 2000;
/** BENCH_EXTRA_DOCS: documents bulk-inserted (untimed) after the insert phase; default none. */
const EXTRA_DOCS = Number(process.env.BENCH_EXTRA_DOCS ?? 0) || 0;
const PHASE_LIMIT_MS = 20_000;
const RUN_LIMIT_MS = 150_000;

interface PhaseResult {
  ops: number;
  ms: number;
  failures: number;
}

/** Runs `op(i)` for i in [0, count) on `concurrency` workers until done or the time limit. */
async function phase(count: number, concurrency: number, op: (i: number) => Promise<boolean>): Promise<PhaseResult> {
  const started = performance.now();
  const deadline = started + PHASE_LIMIT_MS;
  let next = 0;
  let ops = 0;
  let failures = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count && performance.now() < deadline) {
        const i = next++;
        if (await op(i)) ops++;
        else failures++;
      }
    }),
  );
  return { ops, ms: performance.now() - started, failures };
}

function report(name: string, r: PhaseResult): void {
  const rate = r.ms > 0 ? Math.round((r.ops * 1000) / r.ms) : 0;
  const extra = r.failures > 0 ? ` (${r.failures} failed)` : '';
  console.log(`${name}: ${rate} ops/s${extra}`);
  console.log(`  ${name} detail: ${r.ops} ops in ${Math.round(r.ms)} ms, concurrency ${CONCURRENCY}`);
}

function redact(uri: string): string {
  return uri.replace(/\/\/[^@/]*@/, '//***@');
}

async function main(): Promise<void> {
  const conn = mongoose.createConnection(MONGODB_URI, {
    maxPoolSize: CONCURRENCY * 2,
    serverSelectionTimeoutMS: 5000,
  });
  await conn.asPromise();
  const collection = `bench_${randomBytes(4).toString('hex')}`;
  const schema = new Schema(
    {
      _id: String,
      key: { type: String, unique: true },
      revision: Number,
      payload: String,
      owner: String,
    },
    { versionKey: false, autoIndex: false, autoCreate: false },
  );
  const Doc = conn.model('BenchDoc', schema, collection);
  console.log(`target: ${redact(MONGODB_URI)} (collection ${collection})`);
  try {
    await Doc.syncIndexes();
    const payload = 'p'.repeat(256);

    const inserts = await phase(DOCS, CONCURRENCY, async (i) => {
      await Doc.create({ _id: `d${i}`, key: `k${i}`, revision: 1, payload });
      return true;
    });
    report('insert', inserts);
    if (inserts.ops === 0) throw new Error('no document inserted');

    // Optional, untimed: grow the collection so that scans (filters no index serves) show up.
    let total = inserts.ops;
    const extra = Math.min(EXTRA_DOCS, 200_000);
    for (let start = 0; start < extra; start += 1000) {
      const n = Math.min(1000, extra - start);
      await Doc.insertMany(
        Array.from({ length: n }, (_, j) => {
          const i = total + j;
          return { _id: `d${i}`, key: `k${i}`, revision: 1, payload };
        }),
        { ordered: false, lean: true },
      );
      total += n;
    }
    console.log(`documents: ${total}`);

    // Spread targets over the whole collection (a multiplicative walk, distinct per op).
    const target = (i: number): number => (i * 7919) % total;

    const reads = await phase(READS, CONCURRENCY, async (i) => {
      const doc = await Doc.findOne({ key: `k${target(i)}` }).lean();
      return doc !== null;
    });
    report('point-read', reads);

    // Conditional update of distinct documents: every one should win (revision 1 -> 2).
    const casOp = (offset: number) => async (i: number) => {
      const updated = await Doc.findOneAndUpdate(
        { _id: `d${target(i + offset)}`, revision: 1 },
        { $set: { owner: `w${i}` }, $inc: { revision: 1 } },
        { new: true },
      ).lean();
      return updated !== null;
    };
    const casCount = Math.min(CAS_UPDATES, Math.floor(total / 2));
    report('conditional-findOneAndUpdate', await phase(casCount, CONCURRENCY, casOp(0)));

    // Same pattern with a unique index whose keys are exactly the filter's fields; servers that
    // use an index only on an exact key-set match (mongo-java-server) then avoid a collection scan.
    await Doc.collection.createIndex({ _id: 1, revision: 1 }, { unique: true });
    report('conditional-findOneAndUpdate-with-{_id,revision}-index', await phase(casCount, CONCURRENCY, casOp(casCount)));
  } finally {
    await conn.db?.dropCollection(collection).catch(() => undefined);
    await conn.close();
  }
}

const runTimer = setTimeout(() => {
  console.error(`bench: exceeded ${RUN_LIMIT_MS} ms, aborting`);
  process.exit(2);
}, RUN_LIMIT_MS);
runTimer.unref();

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error('bench failed:', err);
    process.exit(1);
  },
);
