import { randomBytes } from 'node:crypto';
import type { Connection } from 'mongoose';
import { config } from '../../core/config';
import { hashInput, IdempotencyStore } from '../../core/idempotency';
import { conflict } from '../../core/errors';
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
    // The first run holds the key until every other request has been answered, however slow the
    // machine, so none of them can arrive after it finished and see a replay instead.
    let othersAnswered = 0;
    let allAnswered: () => void = () => undefined;
    const answered = new Promise<void>((r) => (allAnswered = r));
    const slow = async () => {
      runs++;
      await Promise.race([answered, new Promise((r) => setTimeout(r, 20_000))]);
      return 'done';
    };
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, () =>
        store.run('s', 'k3', { x: 1 }, slow).catch((err) => {
          if (++othersAnswered === 9) allAnswered();
          throw err;
        }),
      ),
    );
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

  it('never releases a key after side effects began: a retry resumes with the same planned ids', async () => {
    const created = new Set<string>();
    const plan = () => ({ siteId: randomBytes(8).toString('hex') });
    let crash = true;
    const work = async (a: { plan: Record<string, string>; resumed: boolean; sideEffectsBegin(): Promise<void> }) => {
      await a.sideEffectsBegin();
      created.add(a.plan.siteId);
      if (crash) throw new Error('connection reset after the site was written');
      return { siteId: a.plan.siteId, resumed: a.resumed };
    };
    await expect(store.run('s', 'k5', { n: 1 }, work, { plan })).rejects.toThrow('connection reset');
    crash = false;
    const retry = await store.run('s', 'k5', { n: 1 }, work, { plan });
    expect(retry.value.resumed).toBe(true);
    expect(created.size).toBe(1);
    expect(retry.value.siteId).toBe([...created][0]);
    expect(await store.run('s', 'k5', { n: 1 }, work, { plan })).toEqual({ replayed: true, value: retry.value });
  });

  it('when the write marking a key done fails, the key is kept and a retry resumes instead of repeating', async () => {
    const short = new IdempotencyStore(conn, undefined, 300);
    const created: string[] = [];
    const plan = () => ({ siteId: randomBytes(8).toString('hex') });
    const work = async (a: { plan: Record<string, string>; sideEffectsBegin(): Promise<void> }) => {
      await a.sideEffectsBegin();
      if (!created.includes(a.plan.siteId)) created.push(a.plan.siteId);
      return a.plan.siteId;
    };
    const original = short.model.updateOne.bind(short.model);
    const spy = jest.spyOn(short.model, 'updateOne').mockImplementation(((filter: any, update: any) => {
      if (update?.$set?.state === 'done') return Promise.reject(new Error('primary stepped down'));
      return original(filter, update);
    }) as never);
    await expect(short.run('s', 'k6', {}, work, { plan })).rejects.toThrow('primary stepped down');
    spy.mockRestore();
    const record = await short.model.findById('s:k6').lean();
    expect(record?.state).toBe('in_progress');
    // While the lease is live the key is busy; after it the retry takes over and resumes.
    await expect(short.run('s', 'k6', {}, work, { plan })).rejects.toMatchObject({ code: 'idempotency_in_progress' });
    await new Promise((r) => setTimeout(r, 350));
    const retry = await short.run('s', 'k6', {}, work, { plan });
    expect(created).toEqual([retry.value]);
  });

  it('a key left in progress by a crashed process is taken over after its short lease, not 24 h', async () => {
    const now = Date.now();
    await store.model.create({
      _id: 's:k7',
      requestHash: hashInput({ z: 1 }),
      state: 'in_progress',
      rev: 3,
      plan: { siteId: 'planned-before-crash' },
      leaseUntil: new Date(now - 1),
      sideEffectsAt: new Date(now - 5000),
      attempts: 1,
      createdAt: new Date(now - 6000),
      expiresAt: new Date(now + 86_400_000),
    });
    const r = await store.run('s', 'k7', { z: 1 }, async (a) => ({ plan: a.plan, resumed: a.resumed }));
    expect(r.value).toEqual({ plan: { siteId: 'planned-before-crash' }, resumed: true });
    expect((await store.model.findById('s:k7').lean())?.attempts).toBe(2);
  });

  it('a definitive 4xx after side effects began is stored and replayed, not run again', async () => {
    let runs = 0;
    const work = async (a: { sideEffectsBegin(): Promise<void> }) => {
      runs++;
      await a.sideEffectsBegin();
      throw conflict('name_taken', 'that name is taken');
    };
    await expect(store.run('s', 'k8', {}, work)).rejects.toMatchObject({ code: 'name_taken', status: 409 });
    await expect(store.run('s', 'k8', {}, work)).rejects.toMatchObject({ code: 'name_taken', status: 409 });
    expect(runs).toBe(1);
  });

  it('purges records past their retention', async () => {
    await store.run('s', 'k9', {}, async () => 'old');
    await store.model.updateOne({ _id: 's:k9' }, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    expect(await store.purgeExpired()).toBeGreaterThanOrEqual(1);
    expect(await store.model.findById('s:k9').lean()).toBeNull();
  });
});
