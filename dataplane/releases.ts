import http from 'node:http';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { type Edge, hostKey } from './edge';
import type { EdgeAccess } from './edge-common';
import { endpointOf, type Supervisor } from './supervisor';
import { type DriverWorkload, probeUntil, RuntimeDrivers } from './runtimes/driver';
import { appDriver, storefrontDriver } from './runtimes/bundles';
import type { BundleKind } from './workerd';

/**
 * Commerce releases on the data plane (docs/decisions/0130-commerce-runtime.md): each release is a
 * supervised process (dataplane/workerd.ts) reached through the shared edge at
 * `<release_id>.releases.localhost`; a project's production address `<project_id>.shop.localhost`
 * points at its promoted release. The health gate probes the release's address through the edge.
 * Every request on a release or production address is observed (time, status, duration) and handed
 * to a sink in batches, never awaited by the request; the same observations feed the degraded rule.
 */

export const RELEASES_DOMAIN = 'releases.localhost';
export const SHOP_DOMAIN = 'shop.localhost';
export const releaseHost = (releaseId: string) => `${releaseId}.${RELEASES_DOMAIN}`;
export const productionHost = (projectId: string) => `${projectId}.${SHOP_DOMAIN}`;

/** Spec/contract: a release must answer `GET /` 2xx through the edge within 60 s of its start. */
export const HEALTH_GATE_MS = 60_000;

/**
 * The degraded rule: over the last `windowMs` (60 s), at least `minRequests` (20) requests reached a
 * healthy release (its own address or production) and at least `errorRate` (50 %) of them were 5xx.
 */
export const DEGRADED_RULE = { windowMs: 60_000, minRequests: 20, errorRate: 0.5 } as const;

export interface AccessEntry {
  /** The project of a production address; null on a release's own address. */
  projectId: string | null;
  releaseId: string | null;
  at: Date;
  status: number;
  ms: number;
}

export interface ReleaseRun {
  releaseId: string;
  projectId: string;
  kind: BundleKind;
  /** `<releasesRoot>/<releaseId>/bundle` must hold the unpacked bundle. */
  env: Record<string, string>;
  /** The release's memory limit in MiB (its environment's `memory_mb`); unset: `DEFAULT_RELEASE_MEMORY_MB`. */
  memoryMb?: number;
  /** The health gate's time for this start (a node agent gets it with the release); unset: the host's `healthGateMs`. */
  gateMs?: number;
  /** The commerce platform's URL for a storefront's binding (as the release came to a node agent); unset: the host's. */
  commercePlatformUrl?: string;
}

export interface ReleaseHostOptions {
  supervisor: Supervisor;
  edge: Edge;
  /** `<releasesRoot>/<releaseId>/` per release. */
  releasesRoot: string;
  healthGateMs?: number;
  /** How long a replaced production release keeps serving requests in flight before it stops (default 5 s). */
  drainMs?: number;
  /** Receives access batches (every `flushMs`, default 1 s); its promise is never awaited by a request. */
  onAccess?(batch: AccessEntry[]): Promise<void>;
  flushMs?: number;
  /** Called once when a release the host was told is healthy passes the degraded rule. */
  onDegraded?(releaseId: string, window: { requests: number; errors: number }): void;
  degradedRule?: { windowMs: number; minRequests: number; errorRate: number };
  /** Periodic upkeep (the artifact retention sweep), run every `housekeepingMs` (default 1 h) until close. */
  housekeeping?(): Promise<unknown>;
  housekeepingMs?: number;
  /** The commerce platform's URL for a storefront's `COMMERCE_PLATFORM` binding (dataplane/workerd.ts), read at each start. */
  commercePlatformUrl?(): string | undefined;
  /** The bundle runtimes, by kind (default: workerd's storefront and the node app: dataplane/runtimes/bundles.ts). */
  drivers?: RuntimeDrivers;
}

export type GateResult = { healthy: true; ms: number } | { healthy: false; ms: number; last: string };

export class ReleaseHost {
  private readonly buffer: AccessEntry[] = [];
  private readonly windows = new Map<string, Array<{ at: number; error: boolean }>>();
  private readonly healthy = new Set<string>();
  private readonly production = new Map<string, string>();
  private readonly timer: NodeJS.Timeout;
  private readonly upkeep: NodeJS.Timeout | null = null;
  private readonly rule: { windowMs: number; minRequests: number; errorRate: number };
  private readonly drivers: RuntimeDrivers;

  constructor(private readonly o: ReleaseHostOptions) {
    this.rule = o.degradedRule ?? DEGRADED_RULE;
    this.drivers = o.drivers ?? new RuntimeDrivers([storefrontDriver, appDriver]);
    // The edge answers; this only watches requests finish.
    o.edge.observe((req, res, access) => this.observe(req, res, access));
    this.timer = setInterval(() => this.tick(), o.flushMs ?? 1_000);
    this.timer.unref();
    if (o.housekeeping) {
      const keep = o.housekeeping;
      this.upkeep = setInterval(() => void keep().catch(() => undefined), o.housekeepingMs ?? 3_600_000);
      this.upkeep.unref();
    }
  }

  /** The edge's port. */
  get port(): number {
    return this.o.edge.port;
  }

  url(host: string): string {
    return `http://${host}:${this.o.edge.port}/`;
  }

  releaseDir(releaseId: string): string {
    if (!/^[A-Za-z0-9-]+$/.test(releaseId)) throw new Error(`invalid release id ${releaseId}`);
    return path.join(this.o.releasesRoot, releaseId);
  }

  /**
   * Starts (or starts again) a release's process, routes its own address, and probes `GET /` through
   * the edge until a 2xx or the gate's time is up; on failure the process is stopped and its address
   * answers 503. Given a function, it is the preparation (unpacking the bundle into the release's
   * directory): from its first moment the release counts as starting, so `pruneDirs` keeps its
   * directory and a reconcile pass leaves it alone.
   */
  async start(run: ReleaseRun | (() => Promise<ReleaseRun>), releaseId?: string): Promise<GateResult> {
    const id = typeof run === 'function' ? releaseId : run.releaseId;
    if (!id) throw new Error('start: the release id of a preparation is required');
    this.starting.set(id, (this.starting.get(id) ?? 0) + 1);
    try {
      return await this.startNow(typeof run === 'function' ? await run() : run);
    } finally {
      const n = (this.starting.get(id) ?? 1) - 1;
      if (n > 0) this.starting.set(id, n);
      else this.starting.delete(id);
    }
  }

  /** Releases being prepared (unpacked) or in their gate, with how many starts are under way (their directory is not pruned). */
  private readonly starting = new Map<string, number>();

  /** True while a start of the release (its preparation included) is under way. */
  isStarting(releaseId: string): boolean {
    return this.starting.has(releaseId);
  }

  private async startNow(run: ReleaseRun): Promise<GateResult> {
    const { supervisor, edge } = this.o;
    this.healthy.delete(run.releaseId);
    if (supervisor.has(run.releaseId)) await supervisor.remove(run.releaseId);
    const w = this.workload(run);
    const st = await supervisor.add({ id: run.releaseId, ...(await this.drivers.get(run.kind).workload(w)) });
    edge.upsert([releaseHost(run.releaseId)], {
      target: endpointOf(st),
      state: 'running',
      owner: run.releaseId,
    });
    supervisor.start(run.releaseId);
    return this.gate(run.kind, w, run.gateMs);
  }

  /** What the release's driver is handed: its directory holds the bundle, its own address is its route. */
  private workload(run: ReleaseRun): DriverWorkload {
    const dir = this.releaseDir(run.releaseId);
    const commerce = run.commercePlatformUrl ?? this.o.commercePlatformUrl?.();
    return {
      id: run.releaseId,
      runtimeDir: dir,
      dir,
      url: this.url(releaseHost(run.releaseId)),
      memoryMb: run.memoryMb,
      config: run.env,
      ...(commerce ? { upstreams: { 'commerce-platform': commerce } } : {}),
    };
  }

  /** The driver's probe through the edge (the release's own address), until it answers or the gate's time is up. */
  private async gate(kind: BundleKind, w: DriverWorkload, gateMs?: number): Promise<GateResult> {
    const deadline = Date.now() + (gateMs ?? this.o.healthGateMs ?? HEALTH_GATE_MS);
    const out = await probeUntil(this.drivers.get(kind), w, { at: () => ({ port: this.o.edge.port }), deadline });
    if (out.ok) return { healthy: true, ms: out.ms };
    await this.stop(w.id);
    return { healthy: false, ms: out.ms, last: out.last };
  }

  /** The release passed its gate: the degraded rule watches it from now on. */
  markHealthy(releaseId: string): void {
    this.healthy.add(releaseId);
  }

  running(releaseId: string): boolean {
    return this.o.supervisor.status(releaseId)?.state === 'running';
  }

  /** True while the supervisor has the release's process in hand: running, or waiting out its backoff after a crash. */
  supervised(releaseId: string): boolean {
    const state = this.o.supervisor.status(releaseId)?.state;
    return state === 'running' || state === 'backoff' || state === 'stopping';
  }

  /**
   * Stops a release's process; its addresses answer 503 from now on, and its working directory is
   * removed (a later start unpacks the artifact from the blob store again).
   */
  async stop(releaseId: string): Promise<void> {
    this.healthy.delete(releaseId);
    this.o.edge.setState(releaseId, 'stopped');
    if (this.o.supervisor.has(releaseId)) await this.o.supervisor.stop(releaseId);
    await rm(this.releaseDir(releaseId), { recursive: true, force: true });
  }

  /**
   * Removes the working directory of every release that is not running here and not in `keep`
   * (left by a stop that never finished, or by a killed process).
   */
  async pruneDirs(keep: ReadonlySet<string> = new Set()): Promise<string[]> {
    const removed: string[] = [];
    for (const name of await readdir(this.o.releasesRoot).catch(() => [] as string[])) {
      const state = this.o.supervisor.status(name)?.state;
      if (!/^[A-Za-z0-9-]+$/.test(name) || keep.has(name)) continue;
      if (state === 'running' || state === 'backoff' || state === 'stopping' || this.starting.has(name)) continue;
      await rm(path.join(this.o.releasesRoot, name), { recursive: true, force: true });
      removed.push(name);
    }
    return removed;
  }

  /** Stops a release and forgets its port, routes and files. */
  async remove(releaseId: string): Promise<void> {
    this.healthy.delete(releaseId);
    this.o.edge.remove({ owner: releaseId });
    await this.o.supervisor.remove(releaseId);
    await rm(this.releaseDir(releaseId), { recursive: true, force: true });
  }

  /** The release serving a project's production address here, if any. */
  productionOf(projectId: string): string | null {
    return this.production.get(projectId) ?? null;
  }

  /**
   * Points the project's production address at a running release in one route-table swap (a request
   * sees the old release or the new one); the release it replaces keeps its in-flight requests for
   * the drain time, then stops.
   */
  promote(projectId: string, releaseId: string): { previous: string | null } {
    const st = this.o.supervisor.status(releaseId);
    if (!st || st.state !== 'running') throw new Error(`release ${releaseId} is not running`);
    const previous = this.production.get(projectId) ?? null;
    this.o.edge.upsert([productionHost(projectId)], {
      target: endpointOf(st),
      state: 'running',
      owner: releaseId,
    });
    this.production.set(projectId, releaseId);
    if (previous && previous !== releaseId) {
      const t = setTimeout(() => {
        if (this.production.get(projectId) !== previous) void this.stop(previous).catch(() => undefined);
      }, this.o.drainMs ?? 5_000);
      t.unref();
    }
    return { previous };
  }

  /** Access counts of a release over the degraded rule's window. */
  window(releaseId: string, now = Date.now()): { requests: number; errors: number } {
    const w = (this.windows.get(releaseId) ?? []).filter((e) => e.at > now - this.rule.windowMs);
    return { requests: w.length, errors: w.filter((e) => e.error).length };
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    if (this.upkeep) clearInterval(this.upkeep);
    await this.flush();
  }

  /** One request the edge received; `access` (the nginx engine's access line) carries its own duration. */
  private observe(req: http.IncomingMessage, res: http.ServerResponse, access?: EdgeAccess): void {
    const host = hostKey(req.headers.host);
    const onRelease = host.endsWith(`.${RELEASES_DOMAIN}`);
    const onShop = host.endsWith(`.${SHOP_DOMAIN}`);
    if (!onRelease && !onShop) return;
    const route = this.o.edge.route(host);
    // Only what a release served: an address without a route is the edge's 404, not the storefront's.
    if (!route) return;
    const releaseId = route.owner ?? null;
    const projectId = onShop ? host.slice(0, -SHOP_DOMAIN.length - 1) : null;
    const start = performance.now();
    const at = new Date();
    res.once('close', () => {
      const status = res.headersSent ? res.statusCode : 499;
      this.buffer.push({ projectId, releaseId, at, status, ms: access?.ms ?? performance.now() - start });
      if (releaseId) {
        const w = this.windows.get(releaseId) ?? [];
        w.push({ at: Date.now(), error: status >= 500 });
        // Trimmed in batches: one entry off a full window per request would copy it every time.
        if (w.length > 12_000) w.splice(0, w.length - 10_000);
        this.windows.set(releaseId, w);
      }
    });
  }

  private tick(): void {
    void this.flush();
    const now = Date.now();
    for (const [id, w] of this.windows) {
      const kept = w.filter((e) => e.at > now - this.rule.windowMs);
      if (kept.length === 0) this.windows.delete(id);
      else this.windows.set(id, kept);
      if (!this.healthy.has(id)) continue;
      const c = this.window(id, now);
      if (c.requests >= this.rule.minRequests && c.errors / c.requests >= this.rule.errorRate) {
        this.healthy.delete(id);
        this.o.onDegraded?.(id, c);
      }
    }
  }

  private async flush(): Promise<void> {
    if (this.buffer.length === 0 || !this.o.onAccess) {
      if (!this.o.onAccess) this.buffer.length = 0;
      return;
    }
    const batch = this.buffer.splice(0, this.buffer.length);
    await this.o.onAccess(batch).catch(() => undefined);
  }
}

/** A release that should run on this data plane (what `reconcileReleases` is given). */
export interface WantedRelease {
  releaseId: string;
  /** Set when the release serves this project's production address. */
  productionOf: string | null;
  /** Whether its gate passed before (the degraded rule watches it again). */
  healthy: boolean;
  /** Unpacks the bundle into the release's directory and answers how to run it. */
  prepare(): Promise<ReleaseRun>;
  /**
   * Reads the records again right before the release is started: false when it is no longer wanted
   * (or no longer serves the production address it was read with), e.g. a promotion replaced it since
   * the pass read the records. Unset: still wanted.
   */
  stillWanted?(): Promise<boolean>;
}

/**
 * The releases' reconcile pass (docs/decisions/0160-commerce-release-lifecycle.md), registered with
 * the data plane's one reconcile loop (dataplane/reconcile.ts): every wanted release that does not
 * run here is started through its health gate and, when it serves production and the project's
 * production address is not routed here yet, the address is routed to it; then the working
 * directories of releases that do not run are removed. Releases start one at a time (a booting
 * machine is busy). Answers which started and which did not (with the reason).
 *
 * The pass runs periodically, so the records it was given may be older than the host's routes: a
 * promotion routes the production address here first and records the live release after. So the
 * pass never moves a production address this host already routes to another release (that
 * route is at least as new as the records), it leaves alone a release that is starting (being
 * unpacked or in its gate) or that the supervisor is restarting, and it reads the records again
 * (`stillWanted`) right before starting one.
 */
export async function reconcileReleases(
  host: ReleaseHost,
  wanted: WantedRelease[],
  /** Releases whose directory stays even when they do not run here (another process of the same data folder may be starting them). */
  keep: ReadonlySet<string> = new Set(),
): Promise<{ started: string[]; failed: Array<{ releaseId: string; reason: string }> }> {
  const started: string[] = [];
  const failed: Array<{ releaseId: string; reason: string }> = [];
  /** Routes a project's production address to the release only where nothing (or this release) serves it here. */
  const route = (projectId: string, releaseId: string) => {
    const current = host.productionOf(projectId);
    if (current === null || current === releaseId) host.promote(projectId, releaseId);
  };
  for (const w of wanted) {
    if (host.isStarting(w.releaseId)) continue;
    if (host.supervised(w.releaseId)) {
      if (w.productionOf && host.running(w.releaseId)) route(w.productionOf, w.releaseId);
      continue;
    }
    try {
      if (w.stillWanted && !(await w.stillWanted())) continue;
      // Checked again: a promotion may have started it while the records were read.
      if (host.isStarting(w.releaseId) || host.supervised(w.releaseId)) continue;
      const gate = await host.start(() => w.prepare(), w.releaseId);
      if (!gate.healthy) {
        failed.push({ releaseId: w.releaseId, reason: gate.last });
        continue;
      }
      if (w.healthy) host.markHealthy(w.releaseId);
      if (w.productionOf) route(w.productionOf, w.releaseId);
      started.push(w.releaseId);
    } catch (e) {
      failed.push({ releaseId: w.releaseId, reason: (e as Error).message });
    }
  }
  await host.pruneDirs(keep);
  return { started, failed };
}
