/**
 * MongoDB-wire conformance probe.
 *
 * Any server behind MONGODB_URI (the project's own MongoDB-wire server, or a real MongoDB) must pass
 * this file. It pins down exactly the behaviour the platform's code relies on: there are no
 * multi-document transactions and no change streams anywhere, so correctness rests on
 * single-document atomicity (conditional findOneAndUpdate, $inc), unique indexes, cursors with
 * getMore, and the aggregation stages listed below.
 *
 * Every run works in collections named `probe_<random>_*` and drops them at the end.
 * See docs/decisions/0001-mongodb-wire-server.md for the results per candidate server.
 */
import { randomBytes } from 'node:crypto';
import mongoose, { Connection, Schema, Types } from 'mongoose';

const MONGODB_URI = process.env.MONGODB_URI ?? 'mongodb://127.0.0.1:27017/platform';
const PREFIX = `probe_${randomBytes(4).toString('hex')}`;

let conn: Connection;
const commandsStarted: string[] = [];

function coll(name: string): string {
  return `${PREFIX}_${name}`;
}

const schemaOpts = { versionKey: false as const, autoIndex: false, autoCreate: false };

/** Finds the MongoDB error code(s) on a thrown driver/mongoose error (single or bulk). */
function errorCodes(err: unknown): number[] {
  const e = err as {
    code?: number;
    writeErrors?: Array<{ code?: number; err?: { code?: number } }>;
  };
  const codes: number[] = [];
  if (typeof e?.code === 'number') codes.push(e.code);
  for (const we of e?.writeErrors ?? []) {
    const c = we.code ?? we.err?.code;
    if (typeof c === 'number') codes.push(c);
  }
  return codes;
}

async function expectDuplicateKey(p: Promise<unknown>): Promise<void> {
  let caught: unknown;
  try {
    await p;
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeDefined();
  expect(errorCodes(caught)).toContain(11000);
}

beforeAll(async () => {
  conn = mongoose.createConnection(MONGODB_URI, {
    maxPoolSize: 64,
    serverSelectionTimeoutMS: 5000,
    monitorCommands: true,
  });
  await conn.asPromise();
  conn.getClient().on('commandStarted', (ev) => commandsStarted.push(ev.commandName));
});

afterAll(async () => {
  if (!conn) return;
  try {
    const names = (await conn.db!.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name);
    for (const name of names.filter((n) => n.startsWith(`${PREFIX}_`))) {
      await conn.db!.dropCollection(name);
    }
  } finally {
    await conn.close();
  }
});

describe('MongoDB-wire conformance: single-document atomicity', () => {
  it('of 50 concurrent conditional findOneAndUpdate({_id, revision: 1}) exactly one wins, over 5 rounds', async () => {
    const Rev = conn.model('Rev', new Schema({ _id: String, revision: Number, value: String }, schemaOpts), coll('rev'));
    for (let round = 0; round < 5; round++) {
      const _id = `doc-${round}`;
      await Rev.create({ _id, revision: 1, value: 'initial' });
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          Rev.findOneAndUpdate(
            { _id, revision: 1 },
            { $set: { value: `writer-${i}` }, $inc: { revision: 1 } },
            { new: true },
          ).lean(),
        ),
      );
      const winners = results.filter((r) => r !== null);
      expect(winners).toHaveLength(1);
      expect(results.filter((r) => r === null)).toHaveLength(49);
      const final = await Rev.findById(_id).lean();
      expect(final?.revision).toBe(2);
      expect(final?.value).toBe(winners[0]!.value);
    }
  });

  it('atomic claim: 20 concurrent workers over 5 pending docs make exactly 5 claims, each doc claimed once', async () => {
    const Job = conn.model('Job', new Schema({ _id: String, status: String, owner: String }, schemaOpts), coll('jobs'));
    for (let round = 0; round < 3; round++) {
      await Job.deleteMany({});
      await Job.insertMany(Array.from({ length: 5 }, (_, i) => ({ _id: `job-${round}-${i}`, status: 'pending' })));
      const claims = await Promise.all(
        Array.from({ length: 20 }, (_, w) =>
          Job.findOneAndUpdate(
            { status: 'pending' },
            { $set: { status: 'claimed', owner: `worker-${w}` } },
            { new: true },
          ).lean(),
        ),
      );
      const won = claims.filter((c) => c !== null);
      expect(won).toHaveLength(5);
      expect(new Set(won.map((c) => c!._id)).size).toBe(5);
      const docs = await Job.find({}).lean();
      expect(docs.every((d) => d.status === 'claimed')).toBe(true);
      for (const c of won) {
        expect(docs.find((d) => d._id === c!._id)?.owner).toBe(c!.owner);
      }
    }
  });

  it('$inc under 50 concurrent updates adds exactly 50', async () => {
    const Counter = conn.model('Counter', new Schema({ _id: String, n: Number }, schemaOpts), coll('counters'));
    await Counter.create({ _id: 'c', n: 0 });
    await Promise.all(Array.from({ length: 50 }, () => Counter.updateOne({ _id: 'c' }, { $inc: { n: 1 } })));
    expect((await Counter.findById('c').lean())?.n).toBe(50);
  });

  it('$push and $pull on arrays (by value and by condition)', async () => {
    const Arr = conn.model(
      'Arr',
      new Schema({ _id: String, tags: [String], items: [{ _id: false, sku: String, qty: Number }] }, schemaOpts),
      coll('arrays'),
    );
    await Arr.create({ _id: 'a', tags: [], items: [] });
    await Arr.updateOne({ _id: 'a' }, { $push: { tags: 'x' } });
    await Arr.updateOne({ _id: 'a' }, { $push: { tags: { $each: ['y', 'z', 'x'] } } });
    await Arr.updateOne(
      { _id: 'a' },
      {
        $push: {
          items: {
            $each: [
              { sku: 'A', qty: 1 },
              { sku: 'B', qty: 5 },
            ],
          },
        },
      },
    );
    expect((await Arr.findById('a').lean())?.tags).toEqual(['x', 'y', 'z', 'x']);
    await Arr.updateOne({ _id: 'a' }, { $pull: { tags: 'x' } });
    await Arr.updateOne({ _id: 'a' }, { $pull: { items: { qty: { $lt: 2 } } } });
    const doc = await Arr.findById('a').lean();
    expect(doc?.tags).toEqual(['y', 'z']);
    expect(doc?.items).toEqual([{ sku: 'B', qty: 5 }]);
  });

  it('upsert: true inserts when missing and updates when present (updateOne and findOneAndUpdate)', async () => {
    const Up = conn.model('Up', new Schema({ _id: String, n: Number, name: String }, schemaOpts), coll('upserts'));
    const r1 = await Up.updateOne({ _id: 'u1' }, { $set: { name: 'first' }, $inc: { n: 1 } }, { upsert: true });
    expect(r1.upsertedCount).toBe(1);
    const r2 = await Up.updateOne({ _id: 'u1' }, { $set: { name: 'second' }, $inc: { n: 1 } }, { upsert: true });
    expect(r2.upsertedCount).toBe(0);
    expect(r2.matchedCount).toBe(1);
    expect(await Up.findById('u1').lean()).toEqual({ _id: 'u1', n: 2, name: 'second' });
    const created = await Up.findOneAndUpdate({ _id: 'u2' }, { $set: { name: 'new' } }, { upsert: true, new: true }).lean();
    expect(created).toEqual({ _id: 'u2', name: 'new' });
  });
});

describe('MongoDB-wire conformance: indexes', () => {
  function userModel(name: string) {
    const schema = new Schema({ email: { type: String, unique: true }, tenant: String, slug: String, note: String }, schemaOpts);
    schema.index({ tenant: 1, slug: 1 }, { unique: true });
    return conn.model(name, schema, coll(name.toLowerCase()));
  }

  it('a unique index rejects a duplicate with code 11000 (insert and update)', async () => {
    const User = userModel('UniqueUser');
    await User.syncIndexes();
    await User.create({ email: 'a@x', tenant: 't1', slug: 's1' });
    await expectDuplicateKey(User.create({ email: 'a@x', tenant: 't9', slug: 's9' }));
    await User.create({ email: 'c@x', tenant: 't2', slug: 's2' });
    await expectDuplicateKey(User.updateOne({ email: 'c@x' }, { $set: { email: 'a@x' } }));
    expect(await User.countDocuments({})).toBe(2);
  });

  it('a compound unique index rejects a duplicate pair with code 11000 and allows partial overlaps', async () => {
    const User = userModel('CompoundUser');
    await User.syncIndexes();
    await User.create({ email: 'a@x', tenant: 't1', slug: 's1' });
    await User.create({ email: 'b@x', tenant: 't1', slug: 's2' }); // same tenant, other slug
    await User.create({ email: 'c@x', tenant: 't2', slug: 's1' }); // other tenant, same slug
    await expectDuplicateKey(User.create({ email: 'd@x', tenant: 't1', slug: 's1' }));
    expect(await User.countDocuments({})).toBe(3);
  });

  it('syncIndexes is idempotent and creates both indexes', async () => {
    const User = userModel('SyncUser');
    await User.syncIndexes();
    const before = await User.collection.indexes();
    expect(await User.syncIndexes()).toEqual([]);
    const after = await User.collection.indexes();
    expect(after.map((i) => i.name).sort()).toEqual(before.map((i) => i.name).sort());
    const keys = after.map((i) => JSON.stringify(i.key));
    expect(keys).toContain(JSON.stringify({ email: 1 }));
    expect(keys).toContain(JSON.stringify({ tenant: 1, slug: 1 }));
    expect(after.find((i) => JSON.stringify(i.key) === JSON.stringify({ tenant: 1, slug: 1 }))?.unique).toBe(true);
  });

  it('createIndex with the same spec twice is idempotent', async () => {
    const c = conn.db!.collection(coll('createindex'));
    const name1 = await c.createIndex({ tenant: 1, slug: 1 }, { unique: true });
    const name2 = await c.createIndex({ tenant: 1, slug: 1 }, { unique: true });
    expect(name2).toBe(name1);
    expect((await c.indexes()).filter((i) => i.name === name1)).toHaveLength(1);
  });

  it('createIndex on a key that syncIndexes already indexed (mongoose adds background:true) is accepted', async () => {
    const User = userModel('MixedUser');
    await User.syncIndexes();
    const name = await User.collection.createIndex({ email: 1 }, { unique: true });
    expect(name).toBe('email_1');
  });
});

describe('MongoDB-wire conformance: cursors', () => {
  it('a cursor with batchSize(100) pages through 5,000 documents with getMore, in sort order', async () => {
    const Row = conn.model('Row', new Schema({ seq: Number, pad: String }, schemaOpts), coll('rows'));
    const pad = 'x'.repeat(64);
    for (let start = 0; start < 5000; start += 1000) {
      // Insert in descending chunks so the natural order is not the sort order.
      const chunk = Array.from({ length: 1000 }, (_, i) => ({ seq: 4999 - (start + i), pad }));
      await Row.collection.insertMany(chunk, { ordered: true });
    }
    const getMoresBefore = commandsStarted.filter((c) => c === 'getMore').length;
    let count = 0;
    let last = -1;
    const cursor = Row.find({}).sort({ seq: 1 }).batchSize(100).lean().cursor();
    for await (const doc of cursor) {
      expect(doc.seq).toBe(last + 1);
      last = doc.seq as number;
      count++;
    }
    expect(count).toBe(5000);
    expect(last).toBe(4999);
    const getMores = commandsStarted.filter((c) => c === 'getMore').length - getMoresBefore;
    expect(getMores).toBeGreaterThanOrEqual(49);
  });
});

describe('MongoDB-wire conformance: aggregation stages', () => {
  interface CustomerDoc {
    _id: string;
    name: string;
    region: string;
  }
  interface OrderDoc {
    _id: string;
    customerId: string;
    total: number;
    items: string[];
    createdAt: Date;
  }
  const customerSchema = new Schema<CustomerDoc>({ _id: String, name: String, region: String }, schemaOpts);
  const orderSchema = new Schema<OrderDoc>(
    { _id: String, customerId: String, total: Number, items: [String], createdAt: Date },
    schemaOpts,
  );
  let Customer: mongoose.Model<CustomerDoc>;
  let Order: mongoose.Model<OrderDoc>;

  beforeAll(async () => {
    Customer = conn.model('Customer', customerSchema, coll('customers'));
    Order = conn.model('Order', orderSchema, coll('orders'));
    await Customer.insertMany([
      { _id: 'c1', name: 'Ada', region: 'eu' },
      { _id: 'c2', name: 'Bob', region: 'us' },
      { _id: 'c3', name: 'Cy', region: 'eu' },
    ]);
    await Order.insertMany([
      {
        _id: 'o1',
        customerId: 'c1',
        total: 10,
        items: ['a', 'b'],
        createdAt: new Date('2024-01-01'),
      },
      { _id: 'o2', customerId: 'c1', total: 30, items: ['c'], createdAt: new Date('2024-01-02') },
      {
        _id: 'o3',
        customerId: 'c2',
        total: 20,
        items: ['a', 'c', 'd'],
        createdAt: new Date('2024-01-03'),
      },
      { _id: 'o4', customerId: 'c2', total: 5, items: [], createdAt: new Date('2024-01-04') },
      { _id: 'o5', customerId: 'c3', total: 50, items: ['e'], createdAt: new Date('2024-01-05') },
    ]);
  });

  it('$match', async () => {
    const r = await Order.aggregate([{ $match: { customerId: 'c1', total: { $gte: 20 } } }]);
    expect(r.map((d) => d._id)).toEqual(['o2']);
  });

  it('$sort, $skip and $limit', async () => {
    const r = await Order.aggregate([{ $sort: { total: -1 } }, { $skip: 1 }, { $limit: 2 }]);
    expect(r.map((d) => d._id)).toEqual(['o2', 'o3']);
  });

  it('$group with $sum and $max', async () => {
    const r = await Order.aggregate([
      {
        $group: {
          _id: '$customerId',
          revenue: { $sum: '$total' },
          biggest: { $max: '$total' },
          n: { $sum: 1 },
        },
      },
      { $sort: { _id: 1 } },
    ]);
    expect(r).toEqual([
      { _id: 'c1', revenue: 40, biggest: 30, n: 2 },
      { _id: 'c2', revenue: 25, biggest: 20, n: 2 },
      { _id: 'c3', revenue: 50, biggest: 50, n: 1 },
    ]);
  });

  it('$project (inclusion, _id exclusion, field reference)', async () => {
    const r = await Order.aggregate([{ $match: { _id: 'o1' } }, { $project: { _id: 0, total: 1, customer: '$customerId' } }]);
    expect(r).toEqual([{ total: 10, customer: 'c1' }]);
  });

  it('$count', async () => {
    const r = await Order.aggregate([{ $match: { total: { $gt: 8 } } }, { $count: 'n' }]);
    expect(r).toEqual([{ n: 4 }]);
  });

  it('$unwind', async () => {
    const r = await Order.aggregate([{ $unwind: '$items' }, { $sort: { _id: 1, items: 1 } }]);
    expect(r.map((d) => `${d._id}:${d.items}`)).toEqual(['o1:a', 'o1:b', 'o2:c', 'o3:a', 'o3:c', 'o3:d', 'o5:e']);
  });

  it('$lookup (localField/foreignField)', async () => {
    const r = await Order.aggregate([
      { $match: { _id: { $in: ['o1', 'o3'] } } },
      {
        $lookup: {
          from: coll('customers'),
          localField: 'customerId',
          foreignField: '_id',
          as: 'customer',
        },
      },
      { $sort: { _id: 1 } },
    ]);
    expect(r.map((d) => [d._id, d.customer.map((c: { name: string }) => c.name)])).toEqual([
      ['o1', ['Ada']],
      ['o3', ['Bob']],
    ]);
  });

  it('$facet (optional for the code: avoided if the chosen server lacks it)', async () => {
    const r = await Order.aggregate([
      { $match: { total: { $gte: 10 } } },
      {
        $facet: {
          total: [{ $count: 'n' }],
          page: [{ $sort: { total: -1 } }, { $limit: 2 }, { $project: { _id: 1 } }],
        },
      },
    ]);
    expect(r).toEqual([{ total: [{ n: 4 }], page: [{ _id: 'o5' }, { _id: 'o2' }] }]);
  });
});

describe('MongoDB-wire conformance: queries and update operators', () => {
  it('keyset pagination: sort {createdAt: -1, _id: -1} with an $or range filter visits every doc once, in order', async () => {
    const Item = conn.model('Item', new Schema({ createdAt: Date, n: Number }, schemaOpts), coll('keyset'));
    const base = Date.UTC(2024, 0, 1);
    // 40 docs over 10 distinct timestamps so ties on createdAt are common; _ids are shuffled.
    const ids = Array.from({ length: 40 }, () => new Types.ObjectId());
    ids.sort(() => Math.random() - 0.5);
    const docs = ids.map((id, i) => ({
      _id: id,
      createdAt: new Date(base + (i % 10) * 1000),
      n: i,
    }));
    await Item.insertMany(docs);
    const expected = [...docs]
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (b._id.toHexString() < a._id.toHexString() ? -1 : 1))
      .map((d) => d._id.toHexString());

    const seen: string[] = [];
    let after: { createdAt: Date; _id: Types.ObjectId } | undefined;
    for (let page = 0; page < 20; page++) {
      const filter = after
        ? {
            $or: [{ createdAt: { $lt: after.createdAt } }, { createdAt: after.createdAt, _id: { $lt: after._id } }],
          }
        : {};
      const rows = await Item.find(filter).sort({ createdAt: -1, _id: -1 }).limit(7).lean();
      if (rows.length === 0) break;
      seen.push(...rows.map((r) => (r._id as Types.ObjectId).toHexString()));
      const last = rows[rows.length - 1]!;
      after = { createdAt: last.createdAt as Date, _id: last._id as Types.ObjectId };
    }
    expect(seen).toEqual(expected);
  });

  describe('query and update operators', () => {
    interface OpDoc {
      _id: string;
      tag: string;
      status?: string;
      optional?: string;
      spec: { region: string; size: string };
      items: Array<{ sku: string; qty: number }>;
      labels: string[];
    }
    const opSchema = new Schema<OpDoc>(
      {
        _id: String,
        tag: String,
        status: String,
        optional: String,
        spec: { region: String, size: String },
        items: [{ _id: false, sku: String, qty: Number }],
        labels: [String],
      },
      schemaOpts,
    );
    let Op: mongoose.Model<OpDoc>;

    beforeAll(async () => {
      Op = conn.model('Op', opSchema, coll('ops'));
      await Op.insertMany([
        {
          _id: 'd1',
          tag: 'a',
          status: 'live',
          optional: 'yes',
          spec: { region: 'eu', size: 'S' },
          items: [
            { sku: 'A', qty: 1 },
            { sku: 'B', qty: 5 },
          ],
        },
        {
          _id: 'd2',
          tag: 'b',
          status: 'dead',
          spec: { region: 'us', size: 'M' },
          items: [{ sku: 'A', qty: 3 }],
        },
        { _id: 'd3', tag: 'c', spec: { region: 'eu', size: 'L' }, items: [] },
      ]);
    });

    it('$in', async () => {
      expect(
        (
          await Op.find({ tag: { $in: ['a', 'c', 'z'] } })
            .sort({ _id: 1 })
            .lean()
        ).map((d) => d._id),
      ).toEqual(['d1', 'd3']);
    });

    it('$exists (true and false)', async () => {
      expect((await Op.find({ optional: { $exists: true } }).lean()).map((d) => d._id)).toEqual(['d1']);
      expect(
        (
          await Op.find({ optional: { $exists: false } })
            .sort({ _id: 1 })
            .lean()
        ).map((d) => d._id),
      ).toEqual(['d2', 'd3']);
    });

    it('$ne (also matches docs missing the field)', async () => {
      expect(
        (
          await Op.find({ status: { $ne: 'dead' } })
            .sort({ _id: 1 })
            .lean()
        ).map((d) => d._id),
      ).toEqual(['d1', 'd3']);
    });

    it('$elemMatch (both conditions on the same element)', async () => {
      const r = await Op.find({ items: { $elemMatch: { sku: 'A', qty: { $gte: 2 } } } }).lean();
      expect(r.map((d) => d._id)).toEqual(['d2']);
    });

    it('dotted-path queries and updates on sub-documents', async () => {
      expect((await Op.find({ 'spec.region': 'eu' }).sort({ _id: 1 }).lean()).map((d) => d._id)).toEqual(['d1', 'd3']);
      await Op.updateOne({ _id: 'd3' }, { $set: { 'spec.size': 'XL' } });
      const d3 = await Op.findById('d3').lean();
      expect(d3?.spec).toEqual({ region: 'eu', size: 'XL' });
      expect(await Op.countDocuments({ 'items.sku': 'B' })).toBe(1);
    });

    it('$addToSet (single value and $each)', async () => {
      await Op.updateOne({ _id: 'd1' }, { $addToSet: { labels: 'x' } });
      await Op.updateOne({ _id: 'd1' }, { $addToSet: { labels: 'x' } });
      await Op.updateOne({ _id: 'd1' }, { $addToSet: { labels: { $each: ['x', 'y', 'y'] } } });
      expect((await Op.findById('d1').lean())?.labels).toEqual(['x', 'y']);
    });

    it('$setOnInsert applies only when the upsert inserts', async () => {
      const Up = conn.model(
        'SetOnInsert',
        new Schema({ _id: String, createdBy: String, updatedBy: String }, schemaOpts),
        coll('soi'),
      );
      await Up.updateOne({ _id: 'k' }, { $setOnInsert: { createdBy: 'first' }, $set: { updatedBy: 'first' } }, { upsert: true });
      await Up.updateOne(
        { _id: 'k' },
        { $setOnInsert: { createdBy: 'second' }, $set: { updatedBy: 'second' } },
        { upsert: true },
      );
      expect(await Up.findById('k').lean()).toEqual({
        _id: 'k',
        createdBy: 'first',
        updatedBy: 'second',
      });
    });
  });
});

describe('MongoDB-wire conformance: bulk and counting', () => {
  const bulkSchema = new Schema({ _id: String, kind: String, n: Number }, schemaOpts);

  it('countDocuments and deleteMany', async () => {
    const B = conn.model('Count', bulkSchema, coll('count'));
    await B.insertMany(Array.from({ length: 30 }, (_, i) => ({ _id: `k${i}`, kind: i % 3 === 0 ? 'x' : 'y', n: i })));
    expect(await B.countDocuments({})).toBe(30);
    expect(await B.countDocuments({ kind: 'x' })).toBe(10);
    expect(await B.countDocuments({ kind: 'y', n: { $gte: 20 } })).toBe(7);
    const del = await B.deleteMany({ kind: 'x' });
    expect(del.deletedCount).toBe(10);
    expect(await B.countDocuments({})).toBe(20);
  });

  it('bulkWrite with ordered:false applies every valid op and reports the failing one', async () => {
    const B = conn.model('Bulk', bulkSchema, coll('bulk'));
    await B.insertMany([
      { _id: 'b1', kind: 'x', n: 1 },
      { _id: 'b2', kind: 'x', n: 2 },
    ]);
    const ok = await B.bulkWrite(
      [
        { insertOne: { document: { _id: 'b3', kind: 'y', n: 3 } } },
        { updateOne: { filter: { _id: 'b1' }, update: { $inc: { n: 10 } } } },
        { deleteOne: { filter: { _id: 'b2' } } },
        {
          updateOne: { filter: { _id: 'b4' }, update: { $set: { kind: 'z', n: 4 } }, upsert: true },
        },
      ],
      { ordered: false },
    );
    expect(ok.insertedCount).toBe(1);
    expect(ok.modifiedCount).toBe(1);
    expect(ok.deletedCount).toBe(1);
    expect(ok.upsertedCount).toBe(1);

    let caught: unknown;
    try {
      await B.bulkWrite(
        [
          { insertOne: { document: { _id: 'b5', kind: 'y', n: 5 } } },
          { insertOne: { document: { _id: 'b1', kind: 'dup', n: 0 } } },
          { updateOne: { filter: { _id: 'b3' }, update: { $set: { kind: 'after-dup' } } } },
        ],
        { ordered: false },
      );
    } catch (err) {
      caught = err;
    }
    expect(errorCodes(caught)).toContain(11000);
    const writeErrors = (caught as { writeErrors?: Array<{ index: number }> }).writeErrors ?? [];
    expect(writeErrors.map((w) => w.index)).toEqual([1]);
    expect((await B.findById('b5').lean())?.n).toBe(5);
    expect((await B.findById('b3').lean())?.kind).toBe('after-dup');
    expect((await B.findById('b1').lean())?.n).toBe(11);
  });

  it('insertMany with a duplicate in the middle reports the duplicate (ordered and unordered)', async () => {
    const B = conn.model('InsertMany', bulkSchema, coll('insertmany'));
    await B.create({ _id: 'm3', kind: 'existing', n: 0 });
    const docs = Array.from({ length: 6 }, (_, i) => ({ _id: `m${i + 1}`, kind: 'new', n: i + 1 }));

    // ordered (the default): stops at the duplicate (index 2); the docs before it are inserted.
    let caught: unknown;
    try {
      await B.insertMany(docs);
    } catch (err) {
      caught = err;
    }
    expect(errorCodes(caught)).toContain(11000);
    expect((await B.find({}).sort({ _id: 1 }).lean()).map((d) => d._id)).toEqual(['m1', 'm2', 'm3']);

    // unordered: everything but the duplicates goes in; each duplicate is reported with its index.
    await B.deleteMany({ kind: 'new' });
    caught = undefined;
    try {
      await B.insertMany(docs, { ordered: false });
    } catch (err) {
      caught = err;
    }
    expect(errorCodes(caught)).toContain(11000);
    const writeErrors = (caught as { writeErrors?: Array<{ index: number }> }).writeErrors ?? [];
    expect(writeErrors.map((w) => w.index)).toEqual([2]);
    expect(await B.countDocuments({ kind: 'new' })).toBe(5);
    expect((await B.findById('m3').lean())?.kind).toBe('existing');
  });
});
