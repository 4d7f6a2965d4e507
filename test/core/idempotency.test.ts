import { randomBytes } from 'node:crypto';
import type { Connection } from 'mongoose';
import { config } from '../../core/config';
import { IdempotencyStore } from '../../core/idempotency';
import { connectMongo, ensureIndexes } from '../../core/mongo';

let conn: Connection;
let store: IdempotencyStore;

beforeAll(async () => {
  conn = await connectMongo(config().mongodbUri.replace(/\/[^/?]*(\?|$)/, `/t_idem_${randomBytes(4).toString('hex')}$1`));
  store = new IdempotencyStore(conn);
  await ensureIndexes(conn);
});
afterAll(async () => {
  await conn.dropDatabase();
  await conn.close();
});

describe('idempotency store (real MongoDB-wire server)', () => {
  it('runs once and replays the stored response for the same key and input', async () => {
    let runs = 0;
    const fn = async () => ({ n: ++runs });
    const first = await store.run('s', 'k1', { a: 1, b: [1, 2] }, fn);
    const second = await store.run('s', 'k1', { b: [1, 2], a: 1 }, fn);
    expect(first).toEqual({ replayed: false, value: { n: 1 } });
    expect(second).toEqual({ replayed: true, value: { n: 1 } });
    expect(runs).toBe(1);
  });

  it('refuses the same key with a different input (409 idempotency_conflict)', async () => {
    await store.run('s', 'k2', { a: 1 }, async () => 'ok');
    await expect(store.run('s', 'k2', { a: 2 }, async () => 'other')).rejects.toMatchObject({
      code: 'idempotency_conflict',
      status: 409,
    });
  });

  it('lets exactly one of many concurrent first requests run; the others see it in progress', async () => {
    let runs = 0;
    const slow = async () => {
      runs++;
      await new Promise((r) => setTimeout(r, 200));
      return 'done';
    };
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => store.run('s', 'k3', { x: 1 }, slow)));
    expect(runs).toBe(1);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of results.filter((r) => r.status === 'rejected')) {
      expect((r as PromiseRejectedResult).reason).toMatchObject({ code: 'idempotency_in_progress', status: 409 });
    }
  });

  it('releases the key when the first attempt fails, so a retry runs', async () => {
    await expect(store.run('s', 'k4', {}, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await store.run('s', 'k4', {}, async () => 'second')).toEqual({ replayed: false, value: 'second' });
  });

  it('keeps scopes apart', async () => {
    await store.run('account-a', 'same', { a: 1 }, async () => 'a');
    expect(await store.run('account-b', 'same', { a: 2 }, async () => 'b')).toEqual({ replayed: false, value: 'b' });
  });
});
