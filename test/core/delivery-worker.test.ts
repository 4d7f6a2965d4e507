import { randomBytes } from 'node:crypto';
import type mongoose from 'mongoose';
import { childLogger } from '../../core/logger';
import { connectMongo, ensureIndexes, model } from '../../core/mongo';
import { type DeliveryAttempt, type DeliveryRecord, deliverySchema, newDelivery } from '../../core/delivery/record';
import { DeliveryWorker, type DeliveryWorkerOptions } from '../../core/delivery/worker';

/** Runs against the real MongoDB-wire server (`platform infra up`): two workers, two connections, one collection. */

interface Endpoint {
  url: string;
}

const schema = deliverySchema<DeliveryRecord>('deliveries');
const run = randomBytes(4).toString('hex');
const uri = `mongodb://127.0.0.1:27017/t_delivery_${run}`;
const log = childLogger('delivery-test');
const attemptOf = (statusCode: number | null): DeliveryAttempt => ({
  statusCode,
  durationMs: 1,
  at: new Date(),
  responseExcerpt: null,
  error: null,
});

describe('the kernel delivery worker', () => {
  let a: mongoose.Connection;
  let b: mongoose.Connection;

  beforeAll(async () => {
    a = await connectMongo(uri);
    b = await connectMongo(uri);
    model(a, 'test', 'Delivery', schema);
    await ensureIndexes(a);
  });

  afterAll(async () => {
    await a?.dropDatabase();
    await Promise.all([a?.close(), b?.close()]);
  });

  const worker = (
    conn: mongoose.Connection,
    over: Partial<DeliveryWorkerOptions<DeliveryRecord, Endpoint>> = {},
  ): DeliveryWorker<DeliveryRecord, Endpoint> =>
    new DeliveryWorker<DeliveryRecord, Endpoint>({
      name: 'test-deliveries',
      log,
      model: model(conn, 'test', 'Delivery', schema),
      schedule: { retryBaseMs: 1_000, retryMaxMs: 3_000, maxAttempts: 4 },
      leaseMs: 30_000,
      pollMs: 1_000,
      endpoint: async () => ({ url: 'http://receiver.test/' }),
      send: async () => attemptOf(204),
      ...over,
    });

  const fresh = (tag: string, n: number): DeliveryRecord[] =>
    Array.from({ length: n }, (_, i) =>
      newDelivery({
        _id: `${tag}-${i}`,
        accountId: `acct-${tag}`,
        webhookId: 'wh',
        eventId: `evt-${i}`,
        eventType: 't',
        body: '{}',
      }),
    );
  const Delivery = () => model(a, 'test', 'Delivery', schema);

  it('of two workers on two connections racing over the same due deliveries, exactly one sends each', async () => {
    const docs = fresh('race', 45);
    const w1 = worker(a);
    expect(await w1.createOnce(docs[0])).toBe(true);
    expect(await w1.createOnce(docs[0])).toBe(false); // a redelivered event makes no second delivery
    for (const d of docs.slice(1)) await w1.createOnce(d);

    const sent = new Map<string, number>();
    const count = async (_e: Endpoint, d: DeliveryRecord) => {
      sent.set(d._id, (sent.get(d._id) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, 5)); // both workers hold claims at once
      return attemptOf(204);
    };
    const one = worker(a, { send: count });
    const two = worker(b, { send: count });
    const drainAll = async (w: DeliveryWorker<DeliveryRecord, Endpoint>) => {
      while (await w.drain());
    };
    await Promise.all([drainAll(one), drainAll(two), drainAll(one), drainAll(two)]);

    expect(sent.size).toBe(45);
    expect([...sent.values()].every((n) => n === 1)).toBe(true);
    const stored = await Delivery().find({ accountId: 'acct-race' }).lean();
    expect(stored.map((d) => [d.status, d.attempts.length, d.leaseUntil])).toEqual(stored.map(() => ['succeeded', 1, null]));
  });

  it('a claim read by two workers at once goes to one of them', async () => {
    const [d] = fresh('claim', 1);
    await worker(a).createOnce(d);
    const claims = await Promise.all([worker(a).claim(d._id, null), worker(b).claim(d._id, null)]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    // The claim holds until its lease lapses; then another worker claims it against the lease it read.
    const held = claims.find(Boolean)!;
    expect(await worker(b).claim(d._id, null)).toBeNull();
    expect(await worker(b).claim(d._id, held.lease)).not.toBeNull();
  });

  it('a lapsed claim (its worker died mid-send) is claimed and sent again', async () => {
    const [d] = fresh('lapsed', 1);
    await worker(a).createOnce(d);
    await Delivery().updateOne({ _id: d._id }, { $set: { leaseUntil: new Date(Date.now() - 1) } });
    let sends = 0;
    const w = worker(b, {
      send: async () => {
        sends++;
        return attemptOf(204);
      },
    });
    while (await w.drain());
    expect(sends).toBe(1);
    expect((await Delivery().findById(d._id).lean())?.status).toBe('succeeded');
  });

  it('retries on the schedule base·2^(n-1) capped at max, fails after the last attempt, and tells the area', async () => {
    const [d] = fresh('retry', 1);
    const ended: string[] = [];
    const pushed: number[] = [];
    const w = worker(a, {
      send: async () => attemptOf(500),
      alsoPush: (_d, r) => {
        pushed.push(r.count);
        return {};
      },
      ended: async (x) => {
        ended.push(x._id);
      },
    });
    await w.createOnce(d);
    const waits: (number | null)[] = [];
    for (let i = 0; i < 4; i++) {
      await w.attempt(d._id, null);
      const now = await Delivery().findById(d._id).lean();
      const last = now!.attempts[now!.attempts.length - 1];
      expect(now!.attempts).toHaveLength(i + 1);
      waits.push(now!.nextAttemptAt ? new Date(now!.nextAttemptAt).getTime() - new Date(now!.updatedAt).getTime() : null);
      expect(last.statusCode).toBe(500);
      expect(now!.status).toBe(i < 3 ? 'pending' : 'failed');
    }
    expect(waits).toEqual([1_000, 2_000, 3_000, null]);
    expect(pushed).toEqual([1, 2, 3, 4]);
    expect(ended).toEqual([d._id]);
    // Requeued by hand: pending and due now, whatever its state; the same record.
    const again = await w.requeue({ _id: d._id, accountId: d.accountId }, { body: 0 });
    expect(again).toMatchObject({ status: 'pending', leaseUntil: null });
    expect(await w.requeue({ _id: d._id, accountId: 'someone-else' }, { body: 0 })).toBeNull();
  });

  it('a delivery whose endpoint is gone fails at its next attempt without sending', async () => {
    const [d] = fresh('gone', 1);
    let sends = 0;
    const w = worker(a, {
      endpoint: async () => null,
      send: async () => {
        sends++;
        return attemptOf(204);
      },
    });
    await w.createOnce(d);
    await w.attempt(d._id, null);
    const now = await Delivery().findById(d._id).lean();
    expect(sends).toBe(0);
    expect(now).toMatchObject({ status: 'failed', nextAttemptAt: null });
    expect(now!.attempts[0]).toMatchObject({ statusCode: null, error: 'the webhook was deleted' });
  });
});
