import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Edge } from './edge';
import { type GateResult, ReleaseHost, type ReleaseRun, type WantedRelease, reconcileReleases } from './releases';
import { Supervisor } from './supervisor';

/**
 * The releases' reconcile pass (dataplane/releases.ts `reconcileReleases`) now runs every 30 s, so the
 * records it was given may be older than the host's routes: a unit test with a fake host (no process
 * runs) that a pass during or after a promotion never moves the production address back.
 */

/** What the pass sees of a release host: routes, processes and starts, all in memory. */
class FakeHost {
  readonly production = new Map<string, string>();
  readonly runningIds = new Set<string>();
  readonly starting = new Set<string>();
  readonly promoted: Array<[string, string]> = [];
  readonly startedIds: string[] = [];
  /** Runs while a release's gate is open (e.g. a promotion landing meanwhile). */
  duringGate: (releaseId: string) => void = () => undefined;

  isStarting(id: string) {
    return this.starting.has(id);
  }
  supervised(id: string) {
    return this.runningIds.has(id);
  }
  running(id: string) {
    return this.runningIds.has(id);
  }
  productionOf(projectId: string) {
    return this.production.get(projectId) ?? null;
  }
  promote(projectId: string, releaseId: string) {
    if (!this.runningIds.has(releaseId)) throw new Error(`release ${releaseId} is not running`);
    const previous = this.production.get(projectId) ?? null;
    this.production.set(projectId, releaseId);
    this.promoted.push([projectId, releaseId]);
    return { previous };
  }
  async start(run: ReleaseRun | (() => Promise<ReleaseRun>), releaseId?: string): Promise<GateResult> {
    const id = typeof run === 'function' ? releaseId! : run.releaseId;
    this.starting.add(id);
    try {
      const r = typeof run === 'function' ? await run() : run;
      this.runningIds.add(r.releaseId);
      this.duringGate(r.releaseId);
      this.startedIds.push(r.releaseId);
      return { healthy: true, ms: 1 };
    } finally {
      this.starting.delete(id);
    }
  }
  markHealthy() {}
  async pruneDirs() {
    return [];
  }
}

const run = (releaseId: string, projectId = 'p1'): ReleaseRun => ({ releaseId, projectId, kind: 'storefront', env: {} });
const want = (releaseId: string, productionOf: string | null, extra: Partial<WantedRelease> = {}): WantedRelease => ({
  releaseId,
  productionOf,
  healthy: true,
  prepare: async () => run(releaseId),
  ...extra,
});
const pass = (host: FakeHost, wanted: WantedRelease[]) => reconcileReleases(host as unknown as ReleaseHost, wanted);

describe('reconcileReleases', () => {
  it('at boot (no production route here) starts the live release and routes production to it', async () => {
    const host = new FakeHost();
    const out = await pass(host, [want('a', 'p1'), want('prev', null)]);
    expect(out).toEqual({ started: ['a', 'prev'], failed: [] });
    expect(host.productionOf('p1')).toBe('a');
  });

  it('a pass that read the records before a promotion does not move production back to the replaced release', async () => {
    const host = new FakeHost();
    // Production was A; B was promoted since the pass read the records (host first, records after).
    host.runningIds.add('a');
    host.runningIds.add('b');
    host.production.set('p1', 'b');
    await pass(host, [want('a', 'p1')]);
    expect(host.productionOf('p1')).toBe('b');
    expect(host.promoted).toEqual([]);
  });

  it('a promotion that lands while the pass starts another release is not reverted', async () => {
    const host = new FakeHost();
    host.runningIds.add('a');
    host.production.set('p1', 'a');
    // While the pass has preview C in its gate, the operator promotes B.
    host.duringGate = (id) => {
      if (id !== 'c') return;
      host.runningIds.add('b');
      host.promote('p1', 'b');
    };
    await pass(host, [want('c', null), want('a', 'p1')]);
    expect(host.productionOf('p1')).toBe('b');
  });

  it('a release replaced and stopped since the records were read is not started again', async () => {
    const host = new FakeHost();
    host.runningIds.add('b');
    host.production.set('p1', 'b');
    const out = await pass(host, [want('a', 'p1', { stillWanted: async () => false })]);
    expect(out.started).toEqual([]);
    expect(host.startedIds).toEqual([]);
    expect(host.productionOf('p1')).toBe('b');
  });

  it('leaves alone a release that a promotion is preparing (unpacking) right now', async () => {
    const host = new FakeHost();
    host.starting.add('a');
    const prepare = jest.fn(async () => run('a'));
    await pass(host, [want('a', 'p1', { prepare })]);
    expect(prepare).not.toHaveBeenCalled();
  });
});

describe('ReleaseHost.pruneDirs', () => {
  let root: string;
  afterEach(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('keeps the directory of a release whose bundle is being unpacked; removes one left behind', async () => {
    root = await mkdtemp(path.join(tmpdir(), 'releases-'));
    const supervisor = new Supervisor();
    const host = new ReleaseHost({ supervisor, edge: new Edge({ port: 0 }), releasesRoot: root });
    await mkdir(path.join(root, 'left-behind'));
    let unpacked!: () => void;
    const unpacking = new Promise<void>((r) => (unpacked = r));
    // A start whose preparation is under way: the directory exists, no process does yet.
    const start = host.start(async () => {
      await mkdir(path.join(root, 'being-prepared', 'bundle'), { recursive: true });
      await unpacking;
      throw new Error('stop here');
    }, 'being-prepared');
    await new Promise((r) => setTimeout(r, 20));
    expect(host.isStarting('being-prepared')).toBe(true);
    expect(await host.pruneDirs()).toEqual(['left-behind']);
    expect(await readdir(root)).toEqual(['being-prepared']);
    unpacked();
    await expect(start).rejects.toThrow('stop here');
    expect(host.isStarting('being-prepared')).toBe(false);
    await host.close();
    await supervisor.shutdown();
  });
});
