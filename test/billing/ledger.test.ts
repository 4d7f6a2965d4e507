import { randomBytes, randomUUID } from 'node:crypto';
import type { Connection } from 'mongoose';
import { connectMongo, ensureIndexes } from '../../core/mongo';
import { Ledger } from '../../subgraphs/billing/ledger';
import { billingModels, type BillingModels } from '../../subgraphs/billing/model';
import { MONTHLY_ALLOCATION } from '../../subgraphs/billing/periods';

/** Store tests of the ledger against the real MongoDB-wire server (its own database). */
const base = process.env.MONGODB_URI ?? 'mongodb://127.0.0.1:27017/platform';
let conn: Connection;
let models: BillingModels;
let clock = new Date('2026-11-20T12:00:00Z');
const now = () => clock;

beforeAll(async () => {
  conn = await connectMongo(base.replace(/\/[^/?]*(\?|$)/, `/t_ledger_${randomBytes(4).toString('hex')}$1`));
  models = billingModels(conn);
  await ensureIndexes(conn);
});
afterAll(async () => {
  await conn.dropDatabase();
  await conn.close();
});

const usage = (credits: number, id = randomUUID()) => ({
  id,
  kind: 'usage' as const,
  credits,
  delta: -credits,
  product: 'assets' as const,
  funding: 'managed' as const,
  source: 'test',
});

async function sumOfEntries(accountId: string): Promise<number> {
  const entries = await models.Entry.find({ accountId }).lean();
  return entries.reduce((s, e) => s + e.delta, 0);
}

test('a new account gets its plan allocation once, however many callers race', async () => {
  const ledger = new Ledger(models, now);
  const account = randomUUID();
  const balances = await Promise.all(Array.from({ length: 10 }, () => ledger.balance(account, 'pro')));
  for (const b of balances) expect(b.available).toBe(MONTHLY_ALLOCATION.pro);
  expect(await models.Entry.countDocuments({ accountId: account })).toBe(1);
});

test('50 concurrent usage draws and a concurrent top-up: balance = allocation + top-ups − usage, exactly', async () => {
  const ledger = new Ledger(models, now);
  const account = randomUUID();
  await ledger.balance(account, 'free'); // 100 credits
  const draws = Array.from({ length: 50 }, () =>
    ledger.apply(account, null, usage(3), true).then(
      () => 'ok',
      (e) => e.code,
    ),
  );
  const topUp = ledger.apply(account, null, { id: randomUUID(), kind: 'top_up', credits: 40, delta: 40, source: 'test' }, false);
  const [results] = await Promise.all([Promise.all(draws), topUp]);
  const ok = results.filter((r) => r === 'ok').length;
  const refused = results.filter((r) => r === 'insufficient_credits').length;
  expect(ok + refused).toBe(50);
  const b = await ledger.balance(account);
  expect(b.available).toBeGreaterThanOrEqual(0);
  expect(b.usedThisPeriod).toBe(ok * 3);
  expect(b.available).toBe(100 + 40 - ok * 3);
  expect(b.available).toBe(b.allocation + b.topUpsThisPeriod - b.usedThisPeriod);
  expect(await sumOfEntries(account)).toBe(b.available);
  expect(await models.Entry.countDocuments({ accountId: account, kind: 'usage' })).toBe(ok);
  const seqs = (await models.Entry.find({ accountId: account }).lean()).map((e) => e.seq);
  expect(new Set(seqs).size).toBe(seqs.length);
  expect(Math.max(...(seqs as number[]))).toBe(b.revision);
  // At most 140 / 3 = 46 draws fit (fewer when refusals came before the top-up landed).
  expect(ok).toBeLessThanOrEqual(46);
  expect(refused).toBeGreaterThan(0);
});

test('the same entry id applied concurrently and again later counts once', async () => {
  const ledger = new Ledger(models, now);
  const account = randomUUID();
  const id = randomUUID();
  const results = await Promise.all(Array.from({ length: 10 }, () => ledger.apply(account, 'free', usage(7, id), true)));
  expect(results.filter((r) => !r.replayed)).toHaveLength(1);
  const again = await ledger.apply(account, 'free', usage(7, id), true);
  expect(again.replayed).toBe(true);
  const b = await ledger.balance(account);
  expect(b.available).toBe(93);
  expect(await models.Entry.countDocuments({ accountId: account, kind: 'usage' })).toBe(1);
});

test('month rollover: unused allocation expires, top-ups carry over, granted once', async () => {
  clock = new Date('2026-10-31T23:59:59Z');
  const ledger = new Ledger(models, now);
  const account = randomUUID();
  await ledger.apply(account, 'free', usage(30), true);
  await ledger.apply(account, null, { id: randomUUID(), kind: 'top_up', credits: 50, delta: 50, source: 'test' }, false);
  expect((await ledger.balance(account)).available).toBe(120);
  clock = new Date('2026-11-01T00:00:00Z');
  const after = await Promise.all(Array.from({ length: 8 }, () => ledger.balance(account)));
  for (const b of after) {
    expect(b.period).toBe('2026-11');
    // 70 unused allocation expired; 50 top-up carried; 100 new allocation.
    expect(b.available).toBe(150);
    expect(b.carriedOver).toBe(50);
    expect(b.usedThisPeriod).toBe(0);
  }
  expect(await models.Entry.countDocuments({ accountId: account, kind: 'allocation' })).toBe(2);
  expect(await sumOfEntries(account)).toBe(150);
  clock = new Date('2026-11-20T12:00:00Z');
});

test('an upgrade seen within a month raises that month allocation once', async () => {
  const ledger = new Ledger(models, now);
  const account = randomUUID();
  await ledger.apply(account, 'free', usage(10), true);
  await Promise.all([ledger.balance(account, 'pro'), ledger.balance(account, 'pro')]);
  const b = await ledger.balance(account, 'pro');
  expect(b.allocation).toBe(1000);
  expect(b.available).toBe(990);
  expect(await sumOfEntries(account)).toBe(990);
});

test('an entry whose writer died in the journal is not applied twice and is moved out later', async () => {
  const ledger = new Ledger(models, now);
  const account = randomUUID();
  await ledger.balance(account, 'free');
  const id = randomUUID();
  const orphan = {
    _id: id,
    accountId: account,
    kind: 'usage',
    credits: 9,
    delta: -9,
    product: 'agents',
    funding: 'managed',
    source: 'test',
    description: null,
    period: '2026-11',
    balanceAfter: null,
    createdAt: new Date(clock.getTime() - 60_000),
  };
  // What a writer's conditional update leaves when the process dies before moving the entry out.
  await models.Balance.updateOne(
    { _id: account },
    { $inc: { available: -9, usedThisPeriod: 9, revision: 1 }, $push: { journal: orphan, recent: id } },
  );
  const replay = await ledger.apply(account, null, usage(9, id), true);
  expect(replay.replayed).toBe(true);
  const b = await ledger.balance(account);
  expect(b.available).toBe(91);
  expect(await models.Entry.findById(id).lean()).toMatchObject({ delta: -9, balanceAfter: null });
  expect((await ledger.head(account)).journal).toEqual([]);
  expect((await models.Entry.findById(id).lean())?.seq).toEqual(expect.any(Number));
  expect(await sumOfEntries(account)).toBe(91);
});
