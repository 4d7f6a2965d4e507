import { childLogger } from '../logger';
import type { DeliveryAttempt } from './record';
import { type Claimed, DeliveryRunner, type DeliveryRunnerOptions, type DeliveryStore } from './runner';

type Due = { _id: string; seq: number };

/** An in-memory store with the runner's contract: claims fenced by a counter, as the object store's. */
interface Doc {
  _id: string;
  seq: number;
  dueAt: number | null;
  attempts: number;
  status: string;
  endpoint: string;
}

function memoryStore(docs: Doc[]): DeliveryStore<Doc, Due> & { parked: string[] } {
  const byId = new Map(docs.map((d) => [d._id, d]));
  const parked: string[] = [];
  return {
    parked,
    async due(now, limit) {
      return docs
        .filter((d) => d.dueAt !== null && d.dueAt <= now.getTime())
        .slice(0, limit)
        .map((d) => ({ _id: d._id, seq: d.seq }));
    },
    async claim(due, now) {
      const d = byId.get(due._id)!;
      if (d.seq !== due.seq) return null;
      d.seq++;
      d.dueAt = now.getTime() + 60_000; // the claim's lease
      return { d: { ...d }, count: d.attempts + 1, fence: d.seq };
    },
    async record(claimed: Claimed<Doc>, recorded, nextAttemptAt) {
      const d = byId.get(claimed.d._id)!;
      if (d.seq !== claimed.fence) return false;
      d.seq++;
      d.attempts++;
      d.status = recorded.status;
      d.dueAt = nextAttemptAt ? nextAttemptAt.getTime() : null;
      return true;
    },
    nextDueInMs: async () => null,
    async park(claimed) {
      const d = byId.get(claimed.d._id)!;
      d.seq++;
      d.dueAt = null;
      parked.push(d._id);
    },
  };
}

const attemptOf = (statusCode: number): DeliveryAttempt => ({
  statusCode,
  durationMs: 1,
  at: new Date(),
  responseExcerpt: null,
  error: null,
});
const docs = (n: number, endpoint = 'up'): Doc[] =>
  Array.from({ length: n }, (_, i) => ({ _id: `d${i}`, seq: 0, dueAt: 0, attempts: 0, status: 'pending', endpoint }));

const runner = (store: DeliveryStore<Doc, Due>, over: Partial<DeliveryRunnerOptions<Doc, string, Due>> = {}) =>
  new DeliveryRunner<Doc, string, Due>({
    name: 'runner-test',
    log: childLogger('runner-test'),
    store,
    schedule: { retryBaseMs: 1_000, retryMaxMs: 4_000, maxAttempts: 3 },
    pollMs: 1_000,
    endpoint: async (d) => (d.endpoint === 'gone' ? null : d.endpoint),
    paused: (e) => e === 'paused',
    send: async () => attemptOf(204),
    ...over,
  });

describe('the kernel delivery runner', () => {
  it('with a concurrency, keeps at most that many attempts in flight, and settles when all are done', async () => {
    const all = docs(25);
    let inFlight = 0;
    let most = 0;
    const r = runner(memoryStore(all), {
      concurrency: 4,
      send: async () => {
        most = Math.max(most, ++inFlight);
        await new Promise((done) => setTimeout(done, 5));
        inFlight--;
        return attemptOf(200);
      },
    });
    expect(await r.drain()).toBe(true); // the room filled up: more may be due
    await r.settle();
    expect(most).toBe(4);
    expect(all.map((d) => [d.status, d.attempts])).toEqual(all.map(() => ['succeeded', 1]));
  });

  it('retries on the schedule of an injected clock, and fails at the last attempt', async () => {
    const [d] = docs(1);
    let now = 1_000_000;
    const waits: number[] = [];
    const r = runner(memoryStore([d]), { now: () => now, send: async () => attemptOf(503) });
    for (let i = 0; i < 3; i++) {
      await r.settle();
      if (d.dueAt !== null) {
        waits.push(d.dueAt - now);
        now = d.dueAt;
      }
    }
    expect(waits).toEqual([1_000, 2_000]);
    expect(d).toMatchObject({ status: 'failed', attempts: 3, dueAt: null });
  });

  it("parks a paused endpoint's delivery without an attempt; a gone endpoint's fails with the area's words", async () => {
    const store = memoryStore([...docs(1, 'paused'), { ...docs(1, 'gone')[0], _id: 'g' }]);
    let sends = 0;
    const ended: string[] = [];
    const errors: string[] = [];
    const r = runner(store, {
      goneError: 'the subscription was deleted',
      send: async () => {
        sends++;
        return attemptOf(204);
      },
      alsoPush: (_d, rec) => {
        if (rec.attempt.error) errors.push(rec.attempt.error);
        return {};
      },
      ended: async (d) => void ended.push(d._id),
    });
    await r.settle();
    expect(sends).toBe(0);
    expect(store.parked).toEqual(['d0']);
    expect(ended).toEqual(['g']);
    expect(errors).toEqual(['the subscription was deleted']);
  });

  it('a delivery another runner claimed first is not attempted twice', async () => {
    const all = docs(10);
    const store = memoryStore(all);
    let sends = 0;
    const send = async () => {
      sends++;
      await new Promise((done) => setTimeout(done, 2));
      return attemptOf(204);
    };
    const one = runner(store, { send, concurrency: 3 });
    const two = runner(store, { send });
    await Promise.all([one.settle(), two.settle(), one.settle()]);
    expect(sends).toBe(10);
  });
});
