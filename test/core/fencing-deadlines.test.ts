import { randomBytes } from 'node:crypto';
import mongoose from 'mongoose';
import { config } from '../../core/config';
import { newId } from '../../core/ids';
import { connectMongo, ensureIndexes } from '../../core/mongo';
import {
  FencedOutError,
  fencedUpdate,
  OperationEngine,
  takeResourceFence,
  type EnqueueInput,
  type OperationDoc,
} from '../../core/operations';

/** Fenced side effects (docs/areas/spine.md point 10) and deadlines (point 11), on the real MongoDB-wire server. */
interface Resource {
  _id: string;
  activeOperationId: string | null;
  fence: string | null;
  state: string;
}
const resourceSchema = new mongoose.Schema<Resource>(
  { _id: String, activeOperationId: String, fence: { type: String, default: null }, state: String },
  { collection: 'fenced_resources', versionKey: false },
);
resourceSchema.index({ _id: 1, fence: 1 }, { unique: true });

let conn: mongoose.Connection;
let Resources: mongoose.Model<Resource>;
const engines: OperationEngine[] = [];

beforeAll(async () => {
  conn = await connectMongo(config().mongodbUri.replace(/\/[^/?]*(\?|$)/, `/t_fence_${randomBytes(4).toString('hex')}$1`));
  Resources = conn.model('FencedResource', resourceSchema);
  await ensureIndexes(conn);
});
afterAll(async () => {
  for (const e of engines) await e.stop();
  await conn.dropDatabase();
  await conn.close();
});

const op = (id: string, token: number) => ({ _id: id, lease: { token } });

describe('fenced side effects', () => {
  it('a worker whose lease was taken over can no longer write the resource', async () => {
    const id = newId();
    const opId = newId();
    await Resources.create({ _id: id, activeOperationId: opId, fence: null, state: 'provisioning' });
    const stale = op(opId, 1);
    const current = op(opId, 2);
    await takeResourceFence(Resources, id, stale);
    await fencedUpdate(Resources, id, stale, { $set: { state: 'half-done' } });
    // The lease moves to another worker (token 2), which stamps the resource first.
    await takeResourceFence(Resources, id, current);
    await expect(fencedUpdate(Resources, id, stale, { $set: { state: 'stale write' } })).rejects.toBeInstanceOf(FencedOutError);
    // …and the stale worker cannot stamp it back.
    await expect(takeResourceFence(Resources, id, stale)).rejects.toBeInstanceOf(FencedOutError);
    await fencedUpdate(Resources, id, current, { $set: { state: 'running' } });
    expect((await Resources.findById(id).lean())?.state).toBe('running');
  });

  it('an operation that does not hold the resource lock may not fence it', async () => {
    const id = newId();
    await Resources.create({ _id: id, activeOperationId: 'someone-else', fence: null, state: 'running' });
    await expect(takeResourceFence(Resources, id, op(newId(), 1))).rejects.toMatchObject({ code: 'resource_lock_not_held' });
  });
});

describe('deadlines', () => {
  const base = (type: string): EnqueueInput => ({
    accountId: 'acct',
    projectId: newId(),
    resourceType: 'site',
    resourceId: newId(),
    operationType: type,
  });
  async function until(id: string, engine: OperationEngine, ms = 15_000): Promise<OperationDoc> {
    const end = Date.now() + ms;
    for (;;) {
      const d = await engine.get(id);
      if (d && (d.status === 'completed' || d.status === 'failed')) return d;
      if (Date.now() > end) throw new Error(`operation still ${d?.status}`);
      await new Promise((r) => setTimeout(r, 30));
    }
  }

  it('a hung step is abandoned at its deadline (retriable step_timeout), with operationId:stepId as its token', async () => {
    const engine = new OperationEngine({ conn, leaseMs: 1000, pollMs: 50, retryBaseMs: 20, stepTimeoutMs: 200 });
    engines.push(engine);
    const tokens: string[] = [];
    engine.register('hangs', async (ctx) => {
      await ctx.step('call_provider', async (s) => {
        tokens.push(s.idempotencyToken);
        await new Promise(() => undefined); // never settles, ignores its signal
      });
    });
    engine.start();
    const started = Date.now();
    const doc = await engine.enqueue({ ...base('hangs'), maxAttempts: 2 });
    const done = await until(doc._id, engine);
    expect(done.status).toBe('failed');
    expect(done.errorCode).toBe('step_timeout');
    expect(done.attempt).toBe(2);
    expect(Date.now() - started).toBeLessThan(5000);
    // Both attempts presented the same token, so a real provider performs the call once.
    expect(tokens).toEqual([`${doc._id}:call_provider`, `${doc._id}:call_provider`]);
  });

  it('an operation past its overall deadline fails for good, even mid-step', async () => {
    const engine = new OperationEngine({ conn, leaseMs: 1000, pollMs: 50, retryBaseMs: 20 });
    engines.push(engine);
    engine.register('slow', async (ctx) => {
      for (let i = 0; i < 50; i++) await ctx.step(`s${i}`, (s) => new Promise((r) => setTimeout(r, 100, s)));
    });
    engine.start();
    const doc = await engine.enqueue({ ...base('slow'), deadlineMs: 400 });
    expect(doc.deadlineAt).toBeInstanceOf(Date);
    const done = await until(doc._id, engine);
    expect(done.status).toBe('failed');
    expect(done.errorCode).toBe('operation_deadline_exceeded');
    expect(done.steps.length).toBeLessThan(10);
  });

  it('a lock naming an operation that was never enqueued is settled by a tombstone, with no clock', async () => {
    const engine = new OperationEngine({ conn, leaseMs: 1000, pollMs: 50 });
    engines.push(engine);
    const id = newId();
    const voided = await engine.getOrVoid(id, { accountId: 'a', projectId: 'p', resourceId: 'r' });
    expect(voided).toMatchObject({ _id: id, status: 'failed', errorCode: 'operation_never_enqueued' });
    // The request that took the lock comes back to enqueue: refused, so it never runs.
    await expect(engine.enqueue({ ...base('provision'), id })).rejects.toMatchObject({ code: 'operation_id_conflict' });
    // An operation that exists is returned as it is.
    const real = await engine.enqueue(base('provision'));
    expect((await engine.getOrVoid(real._id, { accountId: 'a', projectId: 'p', resourceId: 'r' })).status).toBe('pending');
  });
});
