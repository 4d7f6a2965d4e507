import { sleep } from '../../core/sleep';
import { randomBytes } from 'node:crypto';
import type mongoose from 'mongoose';
import { badRequest, retriable } from '../../core/errors';
import type { EventBus } from '../../core/events/event-bus';
import { createKafkaEventBus } from '../../core/events/kafka-event-bus';
import { OutboxRelay } from '../../core/events/outbox';
import { collect, type Collector } from '../support/collect';
import { newId } from '../../core/ids';
import { connectMongo, ensureIndexes } from '../../core/mongo';
import { OperationEngine, type EnqueueInput, type OperationEngineOptions, type OperationEvent } from '../../core/operations';
import { CANDIDATE_FIELDS, type Candidate } from '../../core/operations/store';

/** Runs against the real MongoDB-wire server and Kafka broker (`platform infra up`). */

type Event = OperationEvent & { eventId: string };

async function until<T>(fn: () => Promise<T | undefined | null | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('durable operations (real MongoDB-wire server and Kafka)', () => {
  const run = randomBytes(4).toString('hex');
  const topic = `t_ops_${run}.operations`;
  let conn: mongoose.Connection;
  let bus: EventBus;
  let relay: OutboxRelay;
  let events: Collector<Event>;
  const engines: OperationEngine[] = [];

  function engine(opts: Partial<OperationEngineOptions> = {}): OperationEngine {
    const e = new OperationEngine({ conn, relay, topic, leaseMs: 1000, pollMs: 50, retryBaseMs: 50, ...opts });
    engines.push(e);
    return e;
  }

  function op(operationType: string, extra: Partial<EnqueueInput> = {}): EnqueueInput {
    return {
      accountId: `acct_${run}`,
      projectId: newId(),
      resourceType: 'site',
      resourceId: newId(),
      operationType,
      initiator: { type: 'api_key', id: 'key_1' },
      ...extra,
    };
  }

  /** Events of one operation, deduplicated on eventId (delivery is at-least-once). */
  function eventsOf(id: string): Event[] {
    const seen = new Set<string>();
    return events.messages.map((m) => m.value).filter((v) => v.id === id && !seen.has(v.eventId) && seen.add(v.eventId));
  }
  const sequence = (id: string) => eventsOf(id).map((e) => `${e.status}/${e.step}`);
  const waitForEvent = (id: string, status: string) => events.waitFor(() => eventsOf(id).some((e) => e.status === status));
  const finished = (e: OperationEngine, id: string) =>
    until(async () => {
      const d = await e.get(id);
      return d && (d.status === 'completed' || d.status === 'failed') && d;
    });

  beforeAll(async () => {
    conn = await connectMongo(`mongodb://127.0.0.1:27017/t_ops_${run}`);
    new OperationEngine({ conn, topic }); // registers the model
    await ensureIndexes(conn);
    bus = createKafkaEventBus({ clientId: `t-ops-${run}` });
    await bus.ensureTopics([topic]);
    events = await collect<Event>(bus, [topic]);
    relay = new OutboxRelay({ models: [conn.model('Operation')], bus, intervalMs: 50 });
    relay.start();
  });

  afterEach(async () => {
    await Promise.all(engines.splice(0).map((e) => e.stop(1000)));
  });

  afterAll(async () => {
    await relay?.stop();
    await events?.stop();
    await bus?.close();
    await conn?.dropDatabase();
    await conn?.close();
  });

  it('records the progress of a running step as its detail (at most once a second) and clears it when the step completes', async () => {
    const e = engine();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    e.register('install', async (ctx) => {
      await ctx.step('pull', async (s) => {
        await s.progress('install: 10 packages fetched');
        await s.progress('install: 20 packages fetched'); // within the second: not written
        await gate;
      });
      return null;
    });
    e.start();
    const queued = await e.enqueue(op('install'));
    const running = await until(async () => {
      const d = await e.get(queued._id);
      return d?.steps[0]?.detail ? d : null;
    });
    expect(running.steps[0]).toMatchObject({ id: 'pull', status: 'running', detail: 'install: 10 packages fetched' });
    release();
    const done = await finished(e, queued._id);
    expect(done.steps[0]).toMatchObject({ id: 'pull', status: 'completed', detail: null });
  });

  it('runs three steps to completion and publishes every status and step change in order', async () => {
    const e = engine();
    e.register('provision', async (ctx) => {
      const a = await ctx.step('allocate', async () => ({ slot: 7 }));
      await ctx.step('boot', () => sleep(30, ctx.signal));
      await ctx.step('dns', async () => 'ok');
      return { slot: a.slot, url: 'https://x.sites.localhost' };
    });
    e.start();
    const queued = await e.enqueue(op('provision', { input: { plan: 'small' } }));
    expect(queued).toMatchObject({ status: 'pending', step: 'queued', operationType: 'provision' });

    const done = await finished(e, queued._id);
    expect(done).toMatchObject({
      status: 'completed',
      step: 'completed',
      result: { slot: 7, url: 'https://x.sites.localhost' },
      errorCode: null,
      attempt: 1,
      input: { plan: 'small' },
      initiator: { type: 'api_key', id: 'key_1' },
    });
    expect(done.finishedAt).toBeInstanceOf(Date);
    expect(done.steps.map((s) => [s.id, s.status, s.attempts])).toEqual([
      ['allocate', 'completed', 1],
      ['boot', 'completed', 1],
      ['dns', 'completed', 1],
    ]);
    expect(done.steps[0].result).toEqual({ slot: 7 });

    await waitForEvent(queued._id, 'completed');
    expect(sequence(queued._id)).toEqual([
      'pending/queued',
      'running/queued',
      'running/allocate',
      'running/boot',
      'running/dns',
      'completed/completed',
    ]);
    const last = eventsOf(queued._id).at(-1)!;
    expect(last).toEqual({
      id: queued._id,
      accountId: queued.accountId,
      projectId: queued.projectId,
      resourceType: 'site',
      resourceId: queued.resourceId,
      operationType: 'provision',
      status: 'completed',
      step: 'completed',
      errorCode: null,
      updatedAt: done.updatedAt.toISOString(),
      eventId: expect.any(String),
    });
    // Keyed by project so a project's feed keeps its order.
    expect(events.messages.filter((m) => m.value.id === queued._id).every((m) => m.key === queued.projectId)).toBe(true);
    await until(async () => (await e.get(queued._id))!.outbox.length === 0);
  });

  it('resumes an operation exactly once after its worker dies mid-step, fencing the stale worker', async () => {
    const counters = { allocate: 0, bootA: 0, bootB: 0, dns: 0 };
    let releaseA!: () => void;
    const gateA = new Promise<void>((r) => (releaseA = r));
    let tokenA = -1;

    const a = engine({ workerId: `A-${run}` });
    a.register('restart', async (ctx) => {
      tokenA = ctx.op.lease.token;
      await ctx.step('allocate', async () => ++counters.allocate);
      await ctx.step('boot', async () => {
        await gateA; // blocks until the test lets the stale worker go on
        counters.bootA++;
      });
      await ctx.step('dns', async () => ++counters.dns);
      return 'done by A';
    });
    const b = engine({ workerId: `B-${run}` });
    b.register('restart', async (ctx) => {
      const n = await ctx.step('allocate', async () => ++counters.allocate);
      await ctx.step('boot', async () => ++counters.bootB);
      await ctx.step('dns', async () => ++counters.dns);
      return { allocateResult: n, by: 'B' };
    });

    a.start();
    const queued = await a.enqueue(op('restart'));
    await until(async () => (await a.get(queued._id))?.step === 'boot');
    a.halt(); // the worker freezes in step 2: no more heartbeats, lease kept until it expires

    b.start();
    const done = await finished(b, queued._id);
    expect(done.status).toBe('completed');
    // Step 1 was not run again: its recorded result was replayed to B.
    expect(counters).toEqual({ allocate: 1, bootA: 0, bootB: 1, dns: 1 });
    expect(done.result).toEqual({ allocateResult: 1, by: 'B' });
    expect(done.attempt).toBe(2);
    expect(done.lease.token).toBe(tokenA + 1);
    expect(done.steps.map((s) => [s.id, s.status, s.attempts])).toEqual([
      ['allocate', 'completed', 1],
      ['boot', 'completed', 2],
      ['dns', 'completed', 1],
    ]);

    // The stale worker wakes up: its step write is refused and it never reaches completion.
    releaseA();
    await until(async () => a.stats.leaseLost === 1);
    expect(counters.bootA).toBe(1);
    expect(counters.dns).toBe(1);
    expect(a.stats.fencedWrites).toBeGreaterThanOrEqual(1);
    expect(a.stats.completed).toBe(0);
    // A late completion with A's token is refused too.
    const stale = { id: queued._id, owner: a.workerId, token: tokenA };
    expect(await a.store.complete(stale, queued, 'late')).toBe(false);
    expect(await b.store.complete({ ...stale, owner: b.workerId }, queued, 'late')).toBe(false);
    await until(async () => b.stats.completed === 1);
    expect(b.stats.completed).toBe(1);

    const after = (await b.get(queued._id))!;
    expect(after.result).toEqual({ allocateResult: 1, by: 'B' });
    expect(after.finishedAt).toEqual(done.finishedAt);
    await waitForEvent(queued._id, 'completed');
    await new Promise((r) => setTimeout(r, 300));
    expect(eventsOf(queued._id).filter((ev) => ev.status === 'completed')).toHaveLength(1);
    expect(sequence(queued._id)).toEqual([
      'pending/queued',
      'running/queued',
      'running/allocate',
      'running/boot', // A, then B resumes at the same step: no change, no event
      'running/dns',
      'completed/completed',
    ]);
  });

  it('retries a retriable failure with backoff and then succeeds', async () => {
    let calls = 0;
    const e = engine();
    e.register('upgrade', async (ctx) => {
      await ctx.step('snapshot', async () => 'snap-1');
      await ctx.step('swap', async () => {
        if (++calls < 3) throw retriable('upstream_unavailable', `runtime registry busy (try ${calls})`);
      });
      return { version: '6.5' };
    });
    e.start();
    const queued = await e.enqueue(op('upgrade'));
    const done = await finished(e, queued._id);
    expect(done).toMatchObject({ status: 'completed', attempt: 3, errorCode: null, errorMessage: null });
    expect(done.steps.map((s) => [s.id, s.status, s.attempts])).toEqual([
      ['snapshot', 'completed', 1],
      ['swap', 'completed', 3],
    ]);
    await until(async () => e.stats.completed === 1);
    expect(e.stats).toMatchObject({ retried: 2, completed: 1, failed: 0 });
    await waitForEvent(queued._id, 'completed');
    expect(sequence(queued._id)).toEqual([
      'pending/queued',
      'running/queued',
      'running/snapshot',
      'running/swap',
      'pending/swap',
      'running/swap',
      'pending/swap',
      'running/swap',
      'completed/completed',
    ]);
    expect(
      eventsOf(queued._id)
        .filter((ev) => ev.status === 'pending')
        .slice(1)
        .map((ev) => ev.errorCode),
    ).toEqual(['upstream_unavailable', 'upstream_unavailable']);
  });

  it('fails a non-retriable error at once with its code and a redacted message', async () => {
    const e = engine();
    e.register('recovery_point', async (ctx) => {
      await ctx.step('export', async () => {
        throw badRequest('storage_rejected', 'storage provider refused api_key=sk_live_abc123 for bucket b1');
      });
    });
    e.start();
    const queued = await e.enqueue(op('recovery_point'));
    const done = await finished(e, queued._id);
    expect(done).toMatchObject({ status: 'failed', step: 'export', errorCode: 'storage_rejected', attempt: 1 });
    expect(done.errorMessage).not.toContain('sk_live_abc123');
    expect(done.errorMessage).toContain('[redacted]');
    expect(done.errorMessage).toContain('storage provider refused');
    expect(done.steps[0]).toMatchObject({ id: 'export', status: 'failed' });
    expect(done.steps[0].detail).not.toContain('sk_live_abc123');
    expect(JSON.stringify(done)).not.toContain('sk_live_abc123');
    await waitForEvent(queued._id, 'failed');
    expect(sequence(queued._id)).toEqual(['pending/queued', 'running/queued', 'running/export', 'failed/export']);
    expect(eventsOf(queued._id).at(-1)!.errorCode).toBe('storage_rejected');
  });

  it('ends an unknown error as internal_error after maxAttempts', async () => {
    const e = engine();
    e.register('staging', async () => {
      throw new Error('connect to https://admin:hunter2@db.internal failed');
    });
    e.start();
    const queued = await e.enqueue(op('staging', { maxAttempts: 2 }));
    const done = await finished(e, queued._id);
    expect(done).toMatchObject({ status: 'failed', errorCode: 'internal_error', attempt: 2 });
    expect(done.errorMessage).not.toContain('hunter2');
  });

  it('runs each of 20 operations exactly once with 10 engines racing', async () => {
    const runs = new Map<string, number>();
    const racers = Array.from({ length: 10 }, (_, i) => {
      const e = engine({ workerId: `racer-${i}-${run}`, leaseMs: 30_000, pollMs: 50, concurrency: 2 });
      e.register('start', async (ctx) => {
        runs.set(ctx.op._id, (runs.get(ctx.op._id) ?? 0) + 1);
        await ctx.step('boot', () => sleep(20, ctx.signal));
        await ctx.step('health', () => sleep(5, ctx.signal));
        return ctx.op.input;
      });
      return e;
    });
    racers.forEach((e) => e.start());
    const ops = await Promise.all(
      Array.from({ length: 20 }, (_, i) => racers[i % racers.length].enqueue(op('start', { input: { i } }))),
    );
    const done = await Promise.all(ops.map((o) => finished(racers[0], o._id)));
    expect(done.every((d) => d.status === 'completed' && d.attempt === 1)).toBe(true);
    expect(ops.map((o) => runs.get(o._id))).toEqual(Array(20).fill(1));
    await until(async () => racers.reduce((n, e) => n + e.stats.completed, 0) >= 20);
    expect(racers.reduce((n, e) => n + e.stats.completed, 0)).toBe(20);
    expect(racers.reduce((n, e) => n + e.stats.claimed, 0)).toBe(20);
    expect(racers.filter((e) => e.stats.claimed > 0).length).toBeGreaterThan(1);
    await events.waitFor(() => ops.every((o) => eventsOf(o._id).some((ev) => ev.status === 'completed')));
    for (const o of ops) expect(eventsOf(o._id).filter((ev) => ev.status === 'completed')).toHaveLength(1);
  });

  it('keeps the lease of a step longer than the lease by heartbeats', async () => {
    const runs: string[] = [];
    const make = (name: string) => {
      const e = engine({ workerId: `${name}-${run}`, leaseMs: 1000, pollMs: 20 });
      e.register('restore', async (ctx) => {
        runs.push(name);
        await ctx.step('copy', () => sleep(2500, ctx.signal));
        return name;
      });
      return e;
    };
    const first = make('first');
    first.start();
    const queued = await first.enqueue(op('restore'));
    await until(async () => (await first.get(queued._id))?.step === 'copy');
    const second = make('second');
    second.start();
    const done = await finished(first, queued._id);
    expect(done).toMatchObject({ status: 'completed', result: 'first', attempt: 1 });
    expect(runs).toEqual(['first']);
    expect(done.heartbeatAt!.getTime()).toBeGreaterThan(done.startedAt!.getTime());
  });

  it('hands running operations back on stop() so another worker resumes them at once', async () => {
    const c = engine({ workerId: `C-${run}`, leaseMs: 30_000 });
    let allocations = 0;
    c.register('provision', async (ctx) => {
      await ctx.step('allocate', async () => ++allocations);
      await ctx.step('boot', () => sleep(60_000, ctx.signal));
    });
    c.start();
    const queued = await c.enqueue(op('provision'));
    await until(async () => (await c.get(queued._id))?.step === 'boot');
    await c.stop(100);
    expect(c.stats.released).toBe(1);
    const handedBack = (await c.get(queued._id))!;
    expect(handedBack).toMatchObject({ status: 'running', step: 'boot', lease: { owner: null, until: null } });
    expect(handedBack.steps[1]).toMatchObject({ id: 'boot', status: 'running' });

    const d = engine({ workerId: `D-${run}`, leaseMs: 30_000 });
    d.register('provision', async (ctx) => {
      await ctx.step('allocate', async () => ++allocations);
      await ctx.step('boot', () => sleep(10, ctx.signal));
      return 'resumed';
    });
    d.start();
    const t0 = Date.now();
    const done = await finished(d, queued._id);
    expect(Date.now() - t0).toBeLessThan(5000); // not the 30 s lease
    expect(done).toMatchObject({ status: 'completed', result: 'resumed', attempt: 2 });
    expect(allocations).toBe(1);
  });

  it('returns the existing operation when enqueued again with the same id', async () => {
    const e = engine();
    const id = newId();
    const input = op('stop', { id });
    const first = await e.enqueue(input);
    const again = await e.enqueue(input);
    expect(again._id).toBe(first._id);
    await expect(e.enqueue({ ...input, operationType: 'start' })).rejects.toMatchObject({ code: 'operation_id_conflict' });
  });

  it('does not claim a candidate whose lease was renewed after it was read', async () => {
    const e = engine({ leaseMs: 200 });
    const queued = await e.enqueue(op('provision'));
    const read = async () => (await e.store.candidates(['provision'], new Date(), 100)).find((c) => c._id === queued._id)!;
    const first = await e.store.claim(await read(), 'worker-a', 200, new Date());
    expect(first).not.toBeNull();
    await sleep(250); // worker-a's lease lapses...
    const stale = await read();
    expect(stale.lease.owner).toBe('worker-a');
    // ...and it renews before worker-b's claim lands: the claim must miss.
    expect(await e.store.heartbeat({ id: queued._id, owner: 'worker-a', token: first!.lease.token }, 60_000)).toBe(true);
    expect(await e.store.claim(stale, 'worker-b', 200, new Date())).toBeNull();
    const doc = await e.get(queued._id);
    expect(doc!.lease).toMatchObject({ owner: 'worker-a', token: first!.lease.token });
    // A document read while its lease is live is not claimable at all.
    const held = await e.model.findById(queued._id, CANDIDATE_FIELDS).lean<Candidate>();
    expect(await e.store.claim(held!, 'worker-b', 200, new Date())).toBeNull();
  });

  it('moves finished operations to the archive and still finds them by id, in lists and for enqueue by id', async () => {
    const e = engine({ archiveAfterMs: 0 });
    e.register('provision', async () => 'ok');
    e.start();
    const input = op('provision', { id: newId() });
    const done = await finished(e, (await e.enqueue(input))._id);
    // The move waits for the relay to publish the operation's events (an empty outbox).
    await until(async () => (await e.archiveFinished()) >= 0 && (await e.archive.get(done._id)));
    expect(await e.model.findById(done._id).lean()).toBeNull();
    expect(await e.archive.get(done._id)).toMatchObject({ _id: done._id, status: 'completed', result: 'ok' });
    expect(await e.get(done._id)).toMatchObject({ _id: done._id, status: 'completed' });
    const live = await e.enqueue(op('provision'));
    expect((await e.getMany([done._id, live._id, 'nope'])).map((o) => o._id).sort()).toEqual([done._id, live._id].sort());
    // Its id stays taken: the same request returns it, another is refused, and no second run starts.
    expect((await e.enqueue(input))._id).toBe(done._id);
    await expect(e.enqueue({ ...input, operationType: 'start' })).rejects.toMatchObject({ code: 'operation_id_conflict' });
    expect(await e.model.findById(done._id).lean()).toBeNull();
    expect((await e.getOrVoid(done._id, input)).status).toBe('completed');
    await finished(e, live._id);
  });

  it('keeps a finished operation hot until its events are published', async () => {
    // Its own database and no relay: the events stay in the documents' outboxes.
    const quiet = await connectMongo(`mongodb://127.0.0.1:27017/t_ops_${run}_unrelayed`);
    try {
      const e = new OperationEngine({ conn: quiet, topic, leaseMs: 1000, pollMs: 50, archiveAfterMs: 0 });
      engines.push(e);
      await ensureIndexes(quiet);
      e.register('provision', async () => 'ok');
      e.start();
      const done = await finished(e, (await e.enqueue(op('provision')))._id);
      await e.archiveFinished(new Date(Date.now() + 3_600_000));
      expect((await e.model.findById(done._id).lean())!.outbox.length).toBeGreaterThan(0);
      expect(await e.archive.get(done._id)).toBeNull();
      await e.model.updateOne({ _id: done._id }, { $set: { outbox: [] } }); // as the relay does once published
      await e.archiveFinished(new Date(Date.now() + 3_600_000));
      expect(await e.archive.get(done._id)).not.toBeNull();
      await e.stop(1000);
    } finally {
      await quiet.dropDatabase();
      await quiet.close();
    }
  });

  it('keeps a finished operation hot until it is old enough', async () => {
    const e = engine({ archiveAfterMs: 60_000 });
    e.register('provision', async () => 'ok');
    e.start();
    const done = await finished(e, (await e.enqueue(op('provision')))._id);
    expect(await e.archiveFinished()).toBe(0);
    expect(await e.model.findById(done._id).lean()).not.toBeNull();
    // A minute later it moves.
    await until(async () => (await e.archiveFinished(new Date(Date.now() + 61_000))) >= 0 && (await e.archive.get(done._id)));
    expect(await e.model.findById(done._id).lean()).toBeNull();
  });
});
