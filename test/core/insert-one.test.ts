import { randomBytes } from 'node:crypto';
import mongoose, { Schema } from 'mongoose';
import { loadConfig } from '../../core/config';
import { connectMongo, insertOne, isDuplicateKey } from '../../core/mongo';

/**
 * `insertOne` (docs/decisions/0015-wire-server-hot-paths.md: the inserts of a site create without mongoose's save machinery) stores what
 * `Model.create` would: defaults applied, values cast, unknown fields dropped, validation and unique
 * keys enforced. Real MongoDB-wire server.
 */
describe('insertOne', () => {
  let conn: mongoose.Connection;
  const db = `t_insert_${randomBytes(4).toString('hex')}`;
  beforeAll(async () => {
    conn = await connectMongo(loadConfig(process.env).mongodbUri.replace(/\/[^/?]*(\?|$)/, `/${db}$1`));
  });
  afterAll(async () => {
    await conn.dropDatabase();
    await conn.close();
  });

  interface Thing {
    _id: string;
    name: string;
    count?: number;
    when?: Date;
    tags?: string[];
    kind?: string;
  }
  const schema = new Schema<Thing>(
    {
      _id: String,
      name: { type: String, required: true, unique: true },
      count: Number,
      when: Date,
      tags: { type: [String], default: () => [] },
      kind: { type: String, default: 'plain' },
    },
    { versionKey: false },
  );

  it('stores the same document Model.create does, and refuses what it refuses', async () => {
    const Things = conn.model<Thing>('InsertOneThing', schema);
    await Things.init();
    const raw = { _id: 'a', name: 'A', count: '3', when: '2026-11-24T00:00:00.000Z', extra: true } as unknown as Thing;
    const stored = await insertOne(Things, raw);
    await Things.create({ ...raw, _id: 'b', name: 'B' });
    const [a, b] = await Promise.all([Things.findById('a').lean(), Things.findById('b').lean()]);
    expect(a).toEqual({ ...b, _id: 'a', name: 'A' });
    expect(a).toEqual({ _id: 'a', name: 'A', count: 3, when: new Date('2026-11-24T00:00:00.000Z'), tags: [], kind: 'plain' });
    expect(stored).toEqual(a);

    await expect(insertOne(Things, { _id: 'c' } as Thing)).rejects.toThrow(/name/);
    expect(await Things.findById('c').lean()).toBeNull();
    const dup = await insertOne(Things, { _id: 'a', name: 'other' }).catch((e: unknown) => e);
    expect(isDuplicateKey(dup)).toBe(true);
    const sameName = await insertOne(Things, { _id: 'd', name: 'A' }).catch((e: unknown) => e);
    expect(isDuplicateKey(sameName)).toBe(true);
  });
});
