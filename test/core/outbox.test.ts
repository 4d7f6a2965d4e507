import { randomBytes } from 'node:crypto';
import type mongoose from 'mongoose';
import { Schema } from 'mongoose';
import type { BusMessage, EventBus } from '../../core/events/event-bus';
import { createKafkaEventBus } from '../../core/events/kafka-event-bus';
import { OutboxRelay, outboxField, outboxPlugin, outboxPush, type OutboxEntry } from '../../core/events/outbox';
import { collect, type Collector } from '../support/collect';
import { newId } from '../../core/ids';
import { badRequest } from '../../core/errors';
import { dlqTopic } from '../../core/events/topics';
import { connectMongo, ensureIndexes } from '../../core/mongo';

/** Runs against the real MongoDB-wire server and Kafka broker (`platform infra up`). */

interface Thing {
  _id: string;
  name: string;
  revision: number;
  outbox: OutboxEntry[];
}

interface ThingEvent {
  thingId: string;
  revision: number;
  eventId: string;
}

const thingSchema = new Schema<Thing>(
  {
    _id: { type: String, default: newId },
    name: String,
    revision: { type: Number, default: 0 },
    outbox: outboxField,
  },
  { collection: 'things', versionKey: false },
);
thingSchema.plugin(outboxPlugin);

/** Delegates to a real bus, but fails the first `failures` publishes as a broker outage would. */
function flakyBus(inner: EventBus, failures: number): EventBus & { calls: number } {
  const wrapper = {
    calls: 0,
    async publish(messages: BusMessage[]) {
      wrapper.calls++;
      if (wrapper.calls <= failures) throw new Error('KafkaJSConnectionError: broker 127.0.0.1:9092 unreachable');
      await inner.publish(messages);
    },
    subscribe: inner.subscribe.bind(inner),
    ensureTopics: inner.ensureTopics.bind(inner),
    close: async () => undefined,
  };
  return wrapper;
}

async function until<T>(fn: () => Promise<T | undefined | null | false>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('outbox (real MongoDB-wire server and Kafka)', () => {
  const run = randomBytes(4).toString('hex');
  const topic = `t_outbox_${run}.things`;
  let conn: mongoose.Connection;
  let Things: mongoose.Model<Thing>;
  let bus: EventBus;
  let collector: Collector<ThingEvent>;
  const relays: OutboxRelay[] = [];

  /** A state change and its event, in one conditional single-document update (revision-checked). */
  async function rename(id: string, name: string): Promise<void> {
    for (;;) {
      const { revision } = (await Things.findById(id, { revision: 1 }).lean())!;
      const next = revision + 1;
      const res = await Things.updateOne(
        { _id: id, revision },
        {
          $set: { name, revision: next },
          $push: outboxPush([{ topic, key: id, payload: { thingId: id, revision: next } }]),
        },
      );
      if (res.modifiedCount === 1) return;
    }
  }

  async function create(): Promise<string> {
    const id = newId();
    await Things.create({
      _id: id,
      name: 'first',
      revision: 1,
      outbox: outboxPush([{ topic, key: id, payload: { thingId: id, revision: 1 } }]).outbox.$each,
    });
    return id;
  }

  const eventsOf = (id: string) => collector.messages.filter((m) => m.value.thingId === id);

  beforeAll(async () => {
    conn = await connectMongo(`mongodb://127.0.0.1:27017/t_outbox_${run}`);
    Things = conn.model<Thing>('Thing', thingSchema);
    await ensureIndexes(conn);
    bus = createKafkaEventBus({ clientId: `t-outbox-${run}` });
    await bus.ensureTopics([topic]);
    collector = await collect<ThingEvent>(bus, [topic]);
  });

  afterEach(async () => {
    await Promise.all(relays.splice(0).map((r) => r.stop()));
  });

  afterAll(async () => {
    await collector?.stop();
    await bus?.close();
    await conn?.dropDatabase();
    await conn?.close();
  });

  it('keeps an event whose publish failed and publishes it later', async () => {
    const id = await create();
    const flaky = flakyBus(bus, 2);
    const relay = new OutboxRelay({ models: [Things], bus: flaky, intervalMs: 50 });
    relays.push(relay);

    await expect(relay.flushOnce()).rejects.toThrow(/unreachable/);
    let doc = await Things.findById(id).lean();
    expect(doc!.outbox).toHaveLength(1);
    const eventId = doc!.outbox[0].eventId;

    relay.start();
    const [received] = await collector.waitFor(() => eventsOf(id).length >= 1).then(() => eventsOf(id));
    expect(flaky.calls).toBeGreaterThanOrEqual(3);
    expect(received.key).toBe(id);
    expect(received.value).toEqual({ thingId: id, revision: 1, eventId });
    expect(received.headers?.['event-id']).toBe(eventId);
    doc = await until(async () => {
      const d = await Things.findById(id).lean();
      return d!.outbox.length === 0 && d;
    });
    expect(doc.name).toBe('first');
  });

  it('publishes a write whose process died before relaying when a relay starts later', async () => {
    // No relay runs: as if the process died right after the database write.
    const id = await create();
    await rename(id, 'second');
    await new Promise((r) => setTimeout(r, 300));
    expect(eventsOf(id)).toHaveLength(0);
    expect((await Things.findById(id).lean())!.outbox).toHaveLength(2);

    // Another process starts later, with its own bus.
    const laterBus = createKafkaEventBus({ clientId: `t-outbox-later-${run}` });
    try {
      const relay = new OutboxRelay({ models: [Things], bus: laterBus, intervalMs: 50 });
      relays.push(relay);
      relay.start();
      await collector.waitFor(() => eventsOf(id).length >= 2);
      expect(eventsOf(id).map((m) => m.value.revision)).toEqual([1, 2]);
      await until(async () => (await Things.findById(id).lean())!.outbox.length === 0);
      await relay.stop();
    } finally {
      await laterBus.close();
    }
  });

  it('keeps per-document order and removes exactly the published entries while writes go on', async () => {
    const relay = new OutboxRelay({ models: [Things], bus, intervalMs: 20 });
    relays.push(relay);
    relay.start();
    const ids = await Promise.all([create(), create(), create()]);
    const renames = 15;
    await Promise.all(
      ids.map(async (id) => {
        for (let i = 0; i < renames; i++) {
          await rename(id, `name-${i}`);
          if (i % 4 === 0) relay.nudge();
        }
      }),
    );
    const expected = Array.from({ length: renames + 1 }, (_, i) => i + 1);
    for (const id of ids) {
      await collector.waitFor(() => new Set(eventsOf(id).map((m) => m.value.eventId)).size >= renames + 1);
      // At-least-once: consumers deduplicate on eventId; order per document is push order.
      const seen = new Set<string>();
      const revisions = eventsOf(id)
        .filter((m) => !seen.has(m.value.eventId) && seen.add(m.value.eventId))
        .map((m) => m.value.revision);
      expect(revisions).toEqual(expected);
    }
    await until(async () => (await Things.countDocuments({ 'outbox.createdAt': { $exists: true } })) === 0);
  });

  it('survives an unreachable broker and keeps the entries until one answers', async () => {
    const id = await create();
    const deadBus = createKafkaEventBus({ clientId: `t-outbox-dead-${run}`, brokers: ['127.0.0.1:1'] });
    try {
      const dead = new OutboxRelay({ models: [Things], bus: deadBus, intervalMs: 50, maxBackoffMs: 200 });
      relays.push(dead);
      dead.start();
      await new Promise((r) => setTimeout(r, 2500));
      await dead.stop();
      expect((await Things.findById(id).lean())!.outbox).toHaveLength(1);
      expect(eventsOf(id)).toHaveLength(0);
    } finally {
      await deadBus.close();
    }
    const relay = new OutboxRelay({ models: [Things], bus });
    relays.push(relay);
    expect(await relay.flushOnce()).toBeGreaterThanOrEqual(1);
    await collector.waitFor(() => eventsOf(id).length === 1);
    expect((await Things.findById(id).lean())!.outbox).toHaveLength(0);
  });

  it('publishes nothing after stop returns, even when stopped while taking its lease', async () => {
    let published = 0;
    const counting: EventBus = {
      async publish(messages: BusMessage[]) {
        published += messages.length;
        await bus.publish(messages);
      },
      subscribe: bus.subscribe.bind(bus),
      ensureTopics: bus.ensureTopics.bind(bus),
      close: async () => undefined,
    };
    const relay = new OutboxRelay({ models: [Things], bus: counting, intervalMs: 20 });
    relays.push(relay);
    // Hold the relay inside its lease step (a slow database), and stop it there.
    const internals = relay as unknown as { holdLease(): Promise<boolean> };
    const take = internals.holdLease.bind(relay);
    let entered!: () => void;
    const inLease = new Promise<void>((r) => (entered = r));
    internals.holdLease = async () => {
      entered();
      await new Promise((r) => setTimeout(r, 300));
      return take();
    };
    relay.start();
    await inLease;
    const stopped = relay.stop();
    // A write lands while the lease step is still under way: a relay that scanned after `stop`
    // (the process is shutting down) would publish it from a half-stopped process.
    const id = await create();
    await stopped;
    await new Promise((r) => setTimeout(r, 300));
    expect(published).toBe(0);
    expect((await Things.findById(id).lean())!.outbox).toHaveLength(1);
    await Things.deleteOne({ _id: id });
  });

  it('lets one relay at a time scan a set of collections, and another take over when it stops', async () => {
    const counting = (label: string, seen: Record<string, number>): EventBus => ({
      async publish(messages: BusMessage[]) {
        seen[label] = (seen[label] ?? 0) + messages.length;
        await bus.publish(messages);
      },
      subscribe: bus.subscribe.bind(bus),
      ensureTopics: bus.ensureTopics.bind(bus),
      close: async () => undefined,
    });
    const seen: Record<string, number> = {};
    const a = new OutboxRelay({ models: [Things], bus: counting('a', seen), intervalMs: 20, leaseMs: 60_000 });
    const b = new OutboxRelay({ models: [Things], bus: counting('b', seen), intervalMs: 20, leaseMs: 60_000 });
    relays.push(a, b);
    a.start();
    const first = await create();
    await until(async () => (await Things.findById(first).lean())?.outbox.length === 0);
    b.start();
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push(await create());
    await until(async () => (await Things.countDocuments({ _id: { $in: ids }, 'outbox.0': { $exists: true } })) === 0);
    expect(seen.b ?? 0).toBe(0);
    expect(seen.a).toBeGreaterThanOrEqual(11);

    // The holder stops and gives its lease up: the other relay publishes what comes next.
    await a.stop();
    const later = await create();
    await until(async () => (await Things.findById(later).lean())?.outbox.length === 0);
    expect(seen.b).toBeGreaterThanOrEqual(1);
  });
});

describe('kafka event bus (real broker)', () => {
  const run = randomBytes(4).toString('hex');
  const topic = `t_bus_${run}.jobs`;
  let bus: EventBus;

  beforeAll(() => {
    bus = createKafkaEventBus({ clientId: `t-bus-${run}` });
  });
  afterAll(async () => {
    await bus?.close();
  });

  it('retries a failing handler, dead-letters a message it cannot process, and goes on', async () => {
    await bus.ensureTopics([topic, dlqTopic(topic)]);
    const dlq = await collect<{ n: number }>(bus, [dlqTopic(topic)]);
    const handled: number[] = [];
    const attempts = new Map<number, number>();
    const sub = await bus.subscribe<{ n: number }>({
      groupId: `t-bus-${run}`,
      topics: [topic],
      fromBeginning: true,
      handler: async (m) => {
        const n = m.value.n;
        attempts.set(n, (attempts.get(n) ?? 0) + 1);
        if (n === 2 && attempts.get(n)! < 2) throw new Error('transient');
        if (n === 3) throw badRequest('bad_job', 'job refused: secret=hunter2');
        handled.push(n);
      },
    });
    try {
      await bus.publish([1, 2, 3, 4].map((n) => ({ topic, key: 'same-key', value: { n } })));
      const deadline = Date.now() + 15_000;
      while (handled.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      expect(handled).toEqual([1, 2, 4]);
      expect(attempts.get(2)).toBe(2);
      expect(attempts.get(3)).toBe(1);
      const [dead] = await dlq.waitFor((ms) => ms.length >= 1);
      expect(dead.value).toEqual({ n: 3 });
      expect(dead.headers).toMatchObject({ 'x-dlq-code': 'bad_job', 'x-dlq-offset': expect.any(String) });
      expect(dead.headers?.['x-dlq-reason']).not.toContain('hunter2');
    } finally {
      await sub.stop();
      await dlq.stop();
    }
  });
});
