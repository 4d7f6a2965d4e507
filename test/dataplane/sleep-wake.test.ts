import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { requestLocal } from '../../core/outbound-http';
import { RealNodeExecutor } from '../../dataplane/agent/executors';
import type { AgentSite, AgentTask } from '../../dataplane/agent/wire';
import { DataPlane } from '../../dataplane/plane';
import { RuntimeDrivers } from '../../dataplane/runtimes/driver';
import type { SleepOptions } from '../../dataplane/sleep';
import { staticDriver } from '../support/static-driver';

/**
 * Sleep and wake (docs/decisions/0340-sleep-and-wake.md) on the data plane, with the test-only
 * folder runtime in its sandbox behind the real edge: an idle site sleeps and its next request is
 * answered 200 by the woken site; concurrent first requests share one start; a wake past the edge's
 * wake timeout answers 503 with `Retry-After`; the least recently used awake site sleeps to make
 * room; a site whose plan forbids it never sleeps.
 */

const root = mkdtempSync(path.join(tmpdir(), 'sleep-wake-'));

function plane(name: string, sleep: SleepOptions, wakeTimeoutMs?: number): DataPlane {
  return new DataPlane({
    edgePort: 0,
    host: '127.0.0.1',
    sitesRoot: path.join(root, name, 'sites'),
    cacheRoot: path.join(root, name, 'cache'),
    drivers: new RuntimeDrivers([staticDriver(path.join(root, name, 'runtimes'))]),
    sleep,
    ...(wakeTimeoutMs ? { wakeTimeoutMs } : {}),
  });
}

function site(id: string, o: { sleeps?: boolean } = {}): AgentSite {
  const host = `${id}.sites.localhost`;
  return {
    siteId: id,
    slug: id,
    name: id,
    url: `http://${host}/`,
    hosts: [host],
    runtime: { name: 'static-folder', version: '1.0.0', integrity: 'none', memoryFloorMb: 64 },
    sleeps: o.sleeps ?? true,
  };
}

async function provision(p: DataPlane, s: AgentSite): Promise<void> {
  const executor = new RealNodeExecutor(p);
  for (const step of ['pull_image', 'start_runtime', 'health_check']) {
    const task: AgentTask = { id: `op:${step}`, operation_id: 'op', operation_type: 'provision', step, site: s };
    await executor.run(task, () => undefined);
  }
}

function get(p: DataPlane, host: string, urlPath = '/') {
  const port = Number(new URL(p.edgeUrl).port);
  return requestLocal(port, { method: 'GET', path: urlPath, headers: { host }, timeoutMs: 20_000 });
}

async function until(check: () => boolean, timeoutMs = 15_000): Promise<void> {
  const t0 = Date.now();
  while (!check()) {
    if (Date.now() - t0 > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('sleep and wake of idle sites', () => {
  const idle = plane('idle', { idleMs: 600, memoryMb: null, sweepMs: 100 });
  const host = 'quiet.sites.localhost';

  beforeAll(async () => {
    await idle.start();
    await provision(idle, site('quiet'));
    await provision(idle, site('always-on', { sleeps: false }));
  });
  afterAll(() => idle.stop());

  it('puts an idle site to sleep and answers its next request 200 with the page', async () => {
    expect((await get(idle, host)).status).toBe(200);
    await until(() => idle.sites.process('quiet')?.status === 'sleeping');
    const proc = idle.sites.process('quiet');
    expect(proc?.sleptAt).toEqual(expect.any(String));
    expect(idle.supervisor.status('quiet')?.state).toBe('stopped');

    const woken = await get(idle, host);
    expect(woken.status).toBe(200);
    expect(woken.body.toString()).toContain('It works');
    expect(idle.sites.process('quiet')).toMatchObject({ status: 'running', sleptAt: null });
  });

  it('starts a sleeping site once for ten concurrent first requests', async () => {
    await until(() => idle.sites.process('quiet')?.status === 'sleeping');
    const start = jest.spyOn(idle.supervisor, 'start');
    try {
      const answers = await Promise.all(Array.from({ length: 10 }, () => get(idle, host)));
      expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
      expect(start.mock.calls.filter(([id]) => id === 'quiet')).toHaveLength(1);
    } finally {
      start.mockRestore();
    }
  });

  it('never puts a site to sleep whose plan keeps it on', async () => {
    await until(() => idle.sites.process('quiet')?.status === 'sleeping');
    expect(idle.sites.process('always-on')?.status).toBe('running');
  });

  it('counts sleeps, wakes and held requests on the edge’s metrics', async () => {
    const port = Number(new URL(idle.edgeUrl).port);
    const m = await requestLocal(port, { method: 'GET', path: '/metrics', headers: { host: '127.0.0.1' }, timeoutMs: 5_000 });
    const text = m.body.toString();
    expect(text).toMatch(/edge_sleeps_total\{reason="idle"\} [1-9]/);
    expect(text).toMatch(/edge_wakes_total\{outcome="woke"\} [1-9]/);
    expect(text).toMatch(/edge_held_requests_total\{outcome="answered"\} [1-9]/);
    expect(text).toMatch(/edge_wake_seconds_count [1-9]/);
  });
});

describe('a wake slower than the edge holds', () => {
  const slow = plane('slow', { idleMs: 400, memoryMb: null, sweepMs: 100 }, 300);
  const host = 'sluggish.sites.localhost';

  beforeAll(async () => {
    await slow.start();
    const s = site('sluggish');
    // This site answers 1.5 s after each start: longer than the edge holds a request (300 ms).
    await slow.sites.start({ ...s, memoryMb: 64, sleeps: true, config: { STATIC_BOOT_MS: '1500' } });
  });
  afterAll(() => slow.stop());

  it('answers 503 with Retry-After past the wake timeout, and the woken site after', async () => {
    await until(() => slow.sites.process('sluggish')?.status === 'sleeping');
    const first = await get(slow, host);
    expect(first.status).toBe(503);
    expect(first.headers['retry-after']).toBeDefined();
    await until(() => slow.sites.process('sluggish')?.status === 'running');
    expect((await get(slow, host)).status).toBe(200);
  });
});

describe('capacity: only awake sites count', () => {
  // Room for two awake sites of 64 MiB; sites never sleep for being idle here.
  const said: string[] = [];
  const full = plane('full', { idleMs: 3_600_000, memoryMb: 128, log: (line) => said.push(line) });
  /** The three sites' states, with what the keeper said and each site's restarts (a failure shows why). */
  const states = () => ({
    ...Object.fromEntries(
      ['first', 'second', 'third'].map((id) => {
        const p = full.sites.process(id);
        return [
          id,
          { status: p?.status, restarts: p?.restarts, lastExit: p?.lastExit, lastRequestAt: full.edge.lastRequestAt(id) },
        ];
      }),
    ),
    said,
  });

  beforeAll(() => full.start());
  afterAll(() => full.stop());

  it('puts the least recently used awake site to sleep to start another, and wakes it on its next request', async () => {
    await provision(full, site('first'));
    await provision(full, site('second'));
    // `first` is used after `second` started: `second` is the least recently used. (The nginx engine
    // tells the edge of a request from its access log, a moment after the answer.) Times are in
    // milliseconds: without a pause, `second`'s start and `first`'s request can share one (the node
    // engine records a request as it arrives), and a tie keeps the older site first.
    await new Promise((r) => setTimeout(r, 5));
    const t = Date.now();
    expect((await get(full, 'first.sites.localhost')).status).toBe(200);
    await until(() => (full.edge.lastRequestAt('first') ?? 0) >= t);
    await provision(full, site('third'));
    expect(states()).toMatchObject({
      second: { status: 'sleeping' },
      first: { status: 'running' },
      third: { status: 'running' },
    });

    // Waking `second` makes room the same way: `first` is now the least recently used.
    await new Promise((r) => setTimeout(r, 5));
    const t2 = Date.now();
    expect((await get(full, 'third.sites.localhost')).status).toBe(200);
    await until(() => (full.edge.lastRequestAt('third') ?? 0) >= t2);
    expect((await get(full, 'second.sites.localhost')).status).toBe(200);
    expect(states()).toMatchObject({ second: { status: 'running' }, first: { status: 'sleeping' } });
    expect(full.sites.awake()).toHaveLength(2);
  });
});
