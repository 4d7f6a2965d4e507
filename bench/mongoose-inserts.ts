/**
 * CPU per insert of one new document through mongoose, four ways, against MONGODB_URI (decision
 * 0015): `Model.create` (a hydrated Document and the save machinery), `insertMany` of one,
 * `insertOne` from core/mongo.ts (defaults, casting and validation, then a lean insert) and the raw
 * driver's `insertOne` (no schema at all). Sequential, so the figures are the client's CPU, not
 * the server's. Run: `npm run -s build && node dist/bench/mongoose-inserts.js`.
 */
import { randomBytes } from 'node:crypto';
import { Schema } from 'mongoose';
import { loadConfig } from '../core/config';
import { connectMongo, insertOne } from '../core/mongo';

const N = Number(process.env.BENCH_INSERTS ?? 400);

interface Doc {
  _id: string;
  accountId: string;
  name: string;
  status: string;
  n: number;
  tags: string[];
  lease: { owner: string | null; token: number; until: Date | null };
  createdAt: Date;
  updatedAt: Date;
}

async function main(): Promise<void> {
  const db = `bench_inserts_${randomBytes(4).toString('hex')}`;
  const conn = await connectMongo(loadConfig(process.env).mongodbUri.replace(/\/[^/?]*(\?|$)/, `/${db}$1`));
  try {
    const schema = new Schema<Doc>(
      {
        _id: String,
        accountId: { type: String, required: true },
        name: { type: String, required: true },
        status: { type: String, required: true },
        n: Number,
        tags: { type: [String], default: () => [] },
        lease: { owner: { type: String, default: null }, token: Number, until: { type: Date, default: null } },
        createdAt: Date,
        updatedAt: Date,
      },
      { versionKey: false },
    );
    const Model = conn.model<Doc>('BenchInsert', schema);
    await Model.init();
    let i = 0;
    const doc = (): Doc => ({
      _id: `${db}-${i++}`,
      accountId: 'acct',
      name: 'name',
      status: 'pending',
      n: i,
      tags: ['a', 'b'],
      lease: { owner: null, token: 0, until: null },
      createdAt: new Date(),
      updatedAt: new Date(),
    });
    const ways: [string, () => Promise<unknown>][] = [
      ['Model.create', () => Model.create(doc())],
      ['Model.insertMany([doc])', () => Model.insertMany([doc()])],
      ['insertOne (core/mongo.ts)', () => insertOne(Model, doc())],
      ['driver insertOne', () => Model.collection.insertOne(doc() as never)],
    ];
    console.log(`mongoose inserts, ${N} sequential per way (node ${process.version}, ${new Date().toISOString()})`);
    for (const [label, insert] of ways) {
      for (let w = 0; w < 50; w++) await insert();
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      for (let k = 0; k < N; k++) await insert();
      const cpu = process.cpuUsage(cpu0);
      const ms = (performance.now() - t0) / N;
      console.log(
        `${label.padEnd(28)} ${((cpu.user + cpu.system) / 1000 / N).toFixed(2)} ms CPU, ${ms.toFixed(2)} ms wall per insert`,
      );
    }
  } finally {
    await conn.dropDatabase();
    await conn.close();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
