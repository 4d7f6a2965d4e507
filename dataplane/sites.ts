import { EventEmitter } from 'node:events';
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Edge } from './edge';
import type { InstalledRuntime, ProgressFn, RuntimeCache, RuntimeSpec } from './runtime-cache';
import { type DriverLayout, type DriverOwner, type DriverWorkload, probeUntil, RuntimeDrivers } from './runtimes/driver';
import { ghostDriver } from './runtimes/ghost';
import type { MysqlSiteDatabase } from './site-database';
import { endpointOf, type Supervisor, type WorkloadStatus } from './supervisor';

/**
 * The data plane as the node agent sees it (docs/decisions/0120-data-plane.md): one object that
 * keeps the runtime cache, the supervisor and the edge consistent for a site, whatever software it
 * runs: the site's runtime driver (dataplane/runtimes/, 0285) says what is particular to it. A site
 * is routed only once it answers; stopping marks its routes first (503, no request reaches a dying
 * process); removing it releases its port, routes and files.
 */

export interface SiteHostOptions {
  cache: RuntimeCache;
  supervisor: Supervisor;
  edge: Edge;
  /** Where sites keep their content and database: `<sitesRoot>/<siteId>/`. */
  sitesRoot: string;
  /** How long a start may take to answer (default 180 s: a first boot migrates the database). */
  healthTimeoutMs?: number;
  /** The runtimes this node runs (default: Ghost). */
  drivers?: RuntimeDrivers;
}

/** The drivers of a node that the options name none: the publishing runtime. */
export const defaultDrivers = () => new RuntimeDrivers([ghostDriver]);

export interface HostedSite {
  siteId: string;
  runtime: RuntimeSpec;
  /** The public address (served through the edge). */
  url: string;
  /** Every host the edge serves the site at (its own name, verified custom domains). */
  hosts: string[];
  memoryMb?: number;
  config?: Record<string, string>;
  /** The site's MySQL database (docs/decisions/0220-mysql-adapter.md); its SQLite file when absent. */
  database?: MysqlSiteDatabase;
  /** True when the site may be put to sleep while idle (its plan allows it: dataplane/sleep.ts). */
  sleeps?: boolean;
}

export interface SiteMetadata {
  state: WorkloadStatus['state'] | 'absent';
  port: number | null;
  restarts: number;
  rssBytes: number | null;
  lastExit: WorkloadStatus['lastExit'];
}

/**
 * What a site's metadata shows of its process (docs/spec-decisions.md, "A site's process"): read from
 * the supervisor. `starting`: spawned and not answering yet (a start or resume waiting for its
 * health check); `running`; `restarting`: it exited without being asked and waits its backoff;
 * `stopping`; `stopped`; `crashed`: it kept crashing and the supervisor gave up on it; `sleeping`:
 * stopped for being idle, woken by its next request (dataplane/sleep.ts).
 */
export const SITE_PROCESS_STATUSES = ['starting', 'running', 'restarting', 'stopping', 'stopped', 'crashed', 'sleeping'] as const;
export type SiteProcessStatus = (typeof SITE_PROCESS_STATUSES)[number];

export interface SiteProcess {
  status: SiteProcessStatus;
  /** Restarts after a crash since this platform process began hosting the site (requested restarts are not counted). */
  restarts: number;
  lastExit: WorkloadStatus['lastExit'];
  /** The V8 heap ceiling the process runs with (the release's memory floor), in MiB; null when none was set. */
  memoryFloorMb: number | null;
  /** When the current (or last) process was spawned. */
  startedAt: string | null;
  /** When it was put to sleep (while `sleeping`), else null. */
  sleptAt: string | null;
}

/** What the site host tells of sleep and wake (the `power` emitter). */
export interface SitePowerEvents {
  slept: [{ siteId: string; at: string; reason: 'idle' | 'capacity' }];
  woke: [{ siteId: string; at: string; ms: number }];
}

export class SiteHost {
  readonly drivers: RuntimeDrivers;
  private readonly sites = new Map<string, HostedSite & { runtimeDir: string }>();
  /** Sites spawned and waiting for their first answer (`start`, `resume`). */
  private readonly starting = new Set<string>();
  /**
   * When each site was last active by the platform's doing (ms since the epoch): it began answering
   * (a start, resume or wake) or one of its steps ended. Requests are the edge's to tell.
   */
  private readonly activeAt = new Map<string, number>();
  /** Sleeping sites, with when they went to sleep. */
  private readonly asleep = new Map<string, string>();
  /** The wake under way per site, shared by everyone who waits for it. */
  private readonly waking = new Map<string, Promise<void>>();
  /** Per site: the tail of its serialized lifecycle steps, and how many are queued or running. */
  private readonly lanes = new Map<string, { tail: Promise<unknown>; queued: number }>();
  /** Called before a site's process is spawned (a start, a resume, a wake): room is made for it. */
  private beforeSpawn: ((siteId: string) => Promise<void>) | null = null;
  /** `slept` and `woke` (dataplane/sleep.ts). */
  readonly power = new EventEmitter<SitePowerEvents>();

  constructor(private readonly o: SiteHostOptions) {
    this.drivers = o.drivers ?? defaultDrivers();
  }

  siteDir(siteId: string): string {
    if (!/^[A-Za-z0-9_-]+$/.test(siteId)) throw new Error(`invalid site id ${siteId}`);
    return path.join(this.o.sitesRoot, siteId);
  }

  /** Installs the release unless it is there (the `pull_image` step): its driver's way, else the runtime cache. */
  pullRuntime(spec: RuntimeSpec, onProgress?: ProgressFn): Promise<InstalledRuntime> {
    const driver = this.drivers.get(spec.name);
    return driver.install ? driver.install(spec, this.o.cache, onProgress) : this.o.cache.ensure(spec, onProgress);
  }

  /** Where a site's data lives on this node (its driver's layout): what backups capture and restore. */
  layout(siteId: string, runtimeName: string): DriverLayout {
    return this.drivers.get(runtimeName).layout(this.siteDir(siteId));
  }

  /**
   * Starts the site on its release (installing it when needed), waits until it answers, then routes
   * its hosts to it. Starting a site that runs on another release replaces the process (an upgrade
   * or a restore pins the release this way).
   */
  async start(site: HostedSite, onProgress?: ProgressFn): Promise<{ port: number; version: string; bootMs: number }> {
    const runtime = await this.pullRuntime(site.runtime, onProgress);
    return this.inLane(site.siteId, () => this.startNow(site, runtime.dir));
  }

  private async startNow(site: HostedSite, runtimeDir: string): Promise<{ port: number; version: string; bootMs: number }> {
    // A site this process does not run yet may still have a process left by a platform process that
    // was killed (its children outlive it): two processes on one database must never run.
    if (!this.o.supervisor.has(site.siteId)) await this.killStray(site.siteId);
    const entry = { ...site, runtimeDir };
    this.sites.set(site.siteId, entry);
    this.asleep.delete(site.siteId);
    this.o.edge.setState(site.siteId, 'restoring');
    const driver = this.drivers.get(site.runtime.name);
    const spec = await driver.workload(this.workload(entry));
    if (this.o.supervisor.has(site.siteId)) await this.o.supervisor.remove(site.siteId);
    await this.o.supervisor.add({ id: site.siteId, ...spec });
    await this.beforeSpawn?.(site.siteId);
    const st = this.o.supervisor.start(site.siteId);
    const health = await this.untilHealthy(site.siteId);
    this.route(entry, st);
    return { port: st.port, version: health.version, bootMs: health.ms };
  }

  /** The `health_check` step: the site answers its driver's probe with its version. */
  async healthCheck(siteId: string): Promise<string> {
    // A sleeping site answers by waking (its next request would wake it too).
    if (this.asleep.has(siteId)) await this.wake(siteId);
    return (await this.inLane(siteId, () => this.waitHealthy(siteId))).version;
  }

  /**
   * The site's first set-up (the `configure_site` step): its driver's, answering what the platform
   * keeps (Ghost: the owner's password and the platform's integration); nothing for a runtime without one.
   */
  async configure(siteId: string, owner: DriverOwner): Promise<Record<string, string>> {
    const site = this.get(siteId);
    const driver = this.drivers.get(site.runtime.name);
    if (!driver.configure) return {};
    const configure = driver.configure.bind(driver);
    // In the site's lane: it does not go to sleep while being set up.
    return this.inLane(siteId, () => configure(this.endpoint(siteId), this.workload(site), owner));
  }

  /** Where the site's process is reached now (its port, or its sandbox's socket). */
  endpoint(siteId: string): { port: number; socketPath?: string } {
    const st = this.o.supervisor.status(siteId);
    if (!st) throw new SiteHostError(`site ${siteId} is not supervised`);
    return endpointOf(st);
  }

  /** Stops the process (a sleeping site stays stopped); its hosts answer 503 from the moment this is called. */
  async stop(siteId: string): Promise<void> {
    this.get(siteId);
    this.o.edge.setState(siteId, 'stopped');
    await this.inLane(siteId, async () => {
      this.asleep.delete(siteId);
      this.o.edge.setState(siteId, 'stopped');
      await this.o.supervisor.stop(siteId);
    });
  }

  /** True when this process hosts the site (started here since the process began). */
  isHosted(siteId: string): boolean {
    return this.sites.has(siteId);
  }

  /** The release version the site runs here, or null. */
  releaseOf(siteId: string): string | null {
    return this.sites.get(siteId)?.runtime.version ?? null;
  }

  /** Marks the site's hosts stopped (503) before its process stops (the `drain_traffic` step). */
  drain(siteId: string): void {
    this.get(siteId);
    this.o.edge.setState(siteId, 'stopped');
  }

  /** Starts a stopped (or sleeping) site again on the same port, release and data. */
  async resume(siteId: string): Promise<void> {
    const site = this.get(siteId);
    await this.inLane(siteId, () => this.respawn(site));
  }

  /** Spawns the site's supervised process again (room made first), waits for its answer, routes it. */
  private async respawn(site: HostedSite): Promise<void> {
    await this.beforeSpawn?.(site.siteId);
    const st = this.o.supervisor.start(site.siteId);
    await this.untilHealthy(site.siteId);
    this.asleep.delete(site.siteId);
    this.route(site, st);
  }

  /**
   * Puts a running site to sleep (dataplane/sleep.ts): its hosts are marked `sleeping` first (the
   * edge holds what arrives and wakes it), then its process stops cleanly (SIGTERM: Ghost closes
   * its database). False when it is not running here, is starting, or has a step under way.
   */
  async sleep(siteId: string, reason: 'idle' | 'capacity'): Promise<boolean> {
    if (this.busy(siteId)) return false;
    return this.inLane(siteId, async () => {
      const st = this.o.supervisor.status(siteId);
      if (!this.sites.has(siteId) || st?.state !== 'running' || this.asleep.has(siteId)) return false;
      this.o.edge.setState(siteId, 'sleeping');
      await this.o.supervisor.stop(siteId);
      const at = new Date().toISOString();
      this.asleep.set(siteId, at);
      this.power.emit('slept', { siteId, at, reason });
      return true;
    });
  }

  /**
   * Wakes a sleeping site: one wake however many wait for it (the edge's held requests); settles
   * once it answers its probe and is routed `running`, at once for a site that is not asleep.
   */
  wake(siteId: string): Promise<void> {
    const current = this.waking.get(siteId);
    if (current) return current;
    const woke = this.inLane(siteId, async () => {
      const site = this.sites.get(siteId);
      if (!site || !this.asleep.has(siteId)) return;
      const t0 = Date.now();
      await this.respawn(site);
      this.power.emit('woke', { siteId, at: new Date().toISOString(), ms: Date.now() - t0 });
    }).finally(() => this.waking.delete(siteId));
    this.waking.set(siteId, woke);
    return woke;
  }

  /** True while the site sleeps. */
  isAsleep(siteId: string): boolean {
    return this.asleep.has(siteId);
  }

  /**
   * How many of the site's requests its process has not answered yet (a long download or upload, a
   * slow page): the edge's engines see a request only when it ends (nginx) or starts (the Node
   * engine), its process sees it whole. Null when that cannot be told (not sandboxed, not running).
   */
  requestsUnderWay(siteId: string): Promise<number | null> {
    return this.o.supervisor.requestsUnderWay(siteId);
  }

  /** True while a lifecycle step of the site is queued or running (a sleep would wait behind it). */
  busy(siteId: string): boolean {
    return (this.lanes.get(siteId)?.queued ?? 0) > 0 || this.starting.has(siteId);
  }

  /**
   * The sites hosted here and running (not sleeping, not stopped), with their memory floor, whether
   * they may sleep and when they were last active by the platform's doing (`activeAt`, ms since the
   * epoch; 0 while a first start has not answered yet).
   */
  awake(): Array<{ siteId: string; memoryMb: number; sleeps: boolean; activeAt: number }> {
    return [...this.sites.values()].flatMap((s) => {
      const st = this.o.supervisor.status(s.siteId);
      if (!st || this.asleep.has(s.siteId) || st.state === 'stopped' || st.state === 'failed') return [];
      const activeAt = this.activeAt.get(s.siteId) ?? 0;
      return [{ siteId: s.siteId, memoryMb: s.memoryMb ?? 0, sleeps: s.sleeps === true, activeAt }];
    });
  }

  /** The memory floor of a site hosted here (0 when none was set). */
  memoryOf(siteId: string): number {
    return this.sites.get(siteId)?.memoryMb ?? 0;
  }

  /** Who makes room before a site's process is spawned (the sleep keeper's capacity rule). */
  setBeforeSpawn(fn: (siteId: string) => Promise<void>): void {
    this.beforeSpawn = fn;
  }

  /** Runs `fn` after every step of the site queued before it (one lifecycle step of a site at a time). */
  private inLane<T>(siteId: string, fn: () => Promise<T>): Promise<T> {
    const lane = this.lanes.get(siteId) ?? { tail: Promise.resolve(), queued: 0 };
    this.lanes.set(siteId, lane);
    lane.queued++;
    const run = lane.tail.then(fn, fn);
    lane.tail = run.catch(() => undefined);
    return run.finally(() => {
      if (this.activeAt.has(siteId)) this.activeAt.set(siteId, Date.now());
      if (--lane.queued === 0 && this.lanes.get(siteId) === lane) this.lanes.delete(siteId);
    });
  }

  async restart(siteId: string): Promise<void> {
    await this.stop(siteId);
    await this.resume(siteId);
  }

  /**
   * Routes the site at exactly `hosts` (a custom domain verified or replaced), keeping the state of its
   * routes (a stopped site stays 503 on the new host too). No-op for a site not hosted here.
   */
  setHosts(siteId: string, hosts: string[]): void {
    const site = this.sites.get(siteId);
    if (!site) return;
    const current = [...this.o.edge.table()].find(([, r]) => r.owner === siteId)?.[1];
    site.hosts = [...hosts];
    if (!current) return;
    this.o.edge.remove({ owner: siteId });
    this.o.edge.upsert(site.hosts, current);
  }

  /** The configuration the site's process was started with (undefined when not hosted). */
  configOf(siteId: string): Record<string, string> | undefined {
    const c = this.sites.get(siteId)?.config;
    return c ? { ...c } : c;
  }

  /** The hosts the site is routed at here (empty when not hosted). */
  hostsOf(siteId: string): string[] {
    return [...(this.sites.get(siteId)?.hosts ?? [])];
  }

  /**
   * Ends processes of this site that this supervisor did not start (found by a driver's marker in
   * their environment, Linux `/proc`): what a killed platform process left running.
   */
  private async killStray(siteId: string): Promise<void> {
    const markers = this.drivers.all().flatMap((d) => (d.marker ? [`${d.marker(this.siteDir(siteId))}\0`] : []));
    const pids = await readdir('/proc').catch(() => [] as string[]);
    for (const pid of pids.filter((d) => /^\d+$/.test(d) && Number(d) !== process.pid)) {
      const ours = async () => {
        const env = `${await readFile(`/proc/${pid}/environ`, 'latin1').catch(() => '')}\0`;
        return markers.some((m) => env.includes(m));
      };
      if (!(await ours())) continue;
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        continue;
      }
      // Gone, or a zombie (its environment reads empty): the port and the database file are free.
      for (let i = 0; i < 100 && (await ours()); i++) await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Marks the site's hosts as being restored (503) while its data is replaced. */
  markRestoring(siteId: string): void {
    this.o.edge.setState(siteId, 'restoring');
  }

  /** Stops the site and releases everything it held: port, routes, and (unless kept) its files. */
  async remove(siteId: string, opts: { keepFiles?: boolean } = {}): Promise<void> {
    this.o.edge.remove({ owner: siteId });
    await this.inLane(siteId, () => this.o.supervisor.remove(siteId));
    this.sites.delete(siteId);
    this.asleep.delete(siteId);
    this.activeAt.delete(siteId);
    await this.killStray(siteId);
    if (!opts.keepFiles) await rm(this.siteDir(siteId), { recursive: true, force: true });
  }

  /** What a site's metadata shows of its process. */
  metadata(siteId: string): SiteMetadata {
    const st = this.o.supervisor.status(siteId);
    if (!st) return { state: 'absent', port: null, restarts: 0, rssBytes: null, lastExit: null };
    return { state: st.state, port: st.port, restarts: st.restarts, rssBytes: st.rssBytes, lastExit: st.lastExit };
  }

  /**
   * The site's process as its metadata shows it, from the supervisor; null for a site this process
   * does not host (another platform process, a connected node, the simulated executor).
   */
  process(siteId: string): SiteProcess | null {
    const site = this.sites.get(siteId);
    const st = this.o.supervisor.status(siteId);
    if (!site || !st) return null;
    const sleptAt = this.asleep.get(siteId) ?? null;
    const status: SiteProcessStatus = sleptAt
      ? 'sleeping'
      : st.state === 'running'
        ? this.starting.has(siteId)
          ? 'starting'
          : 'running'
        : st.state === 'backoff'
          ? 'restarting'
          : st.state === 'failed'
            ? 'crashed'
            : st.state;
    return {
      status,
      restarts: st.restarts,
      lastExit: st.lastExit,
      memoryFloorMb: site.memoryMb ?? null,
      startedAt: st.startedAt,
      sleptAt,
    };
  }

  /** The process of every site this process hosts (a connected node's agent reports them: docs/decisions/0385). */
  processes(): Array<SiteProcess & { siteId: string }> {
    return [...this.sites.keys()].flatMap((siteId) => {
      const p = this.process(siteId);
      return p ? [{ siteId, ...p }] : [];
    });
  }

  private async untilHealthy(siteId: string): Promise<{ version: string; ms: number }> {
    this.starting.add(siteId);
    try {
      return await this.waitHealthy(siteId);
    } finally {
      this.starting.delete(siteId);
    }
  }

  /** Probes the site with its driver until it answers, it crashed for good, or the deadline passes. */
  private async waitHealthy(siteId: string): Promise<{ version: string; ms: number }> {
    const site = this.get(siteId);
    const status = () => {
      const st = this.o.supervisor.status(siteId);
      if (!st) throw new SiteHostError(`site ${siteId} is not supervised`);
      return st;
    };
    const out = await probeUntil(this.drivers.get(site.runtime.name), this.workload(site), {
      at: () => (status().state === 'running' ? endpointOf(status()) : null),
      gaveUp: () => (status().state === 'failed' ? 'it kept crashing' : null),
      deadline: Date.now() + (this.o.healthTimeoutMs ?? 180_000),
    });
    if (out.ok) return { version: out.version, ms: out.ms };
    const tail = this.o.supervisor.logs(siteId).slice(-5).join(' | ');
    throw new SiteHostError(`site ${siteId} did not become healthy (${out.last}); last output: ${tail}`);
  }

  /** What the site's driver is handed. */
  private workload(site: HostedSite & { runtimeDir: string }): DriverWorkload {
    return {
      id: site.siteId,
      runtimeDir: site.runtimeDir,
      dir: this.siteDir(site.siteId),
      url: site.url,
      memoryMb: site.memoryMb,
      config: site.config,
      database: site.database,
    };
  }

  private route(site: HostedSite, st: WorkloadStatus): void {
    this.activeAt.set(site.siteId, Date.now());
    this.o.edge.remove({ owner: site.siteId });
    this.o.edge.upsert(site.hosts, { target: endpointOf(st), state: 'running', owner: site.siteId });
  }

  private get(siteId: string): HostedSite & { runtimeDir: string } {
    const s = this.sites.get(siteId);
    if (!s) throw new Error(`site ${siteId} is not hosted here`);
    return s;
  }
}

/** A site that did not answer its probe in time, or is not supervised (the agent's `site_unhealthy`). */
export class SiteHostError extends Error {
  readonly code = 'site_unhealthy';
}
