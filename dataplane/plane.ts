import path from 'node:path';
import { chooseEdgeEngine, Edge, type EdgeEngineChoice } from './edge';
import { type ReconcileRegistry, Reconciler } from './reconcile';
import { RuntimeCache } from './runtime-cache';
import type { RuntimeDrivers } from './runtimes/driver';
import { SiteHost } from './sites';
import { SleepKeeper, type SleepOptions } from './sleep';
import { resolveSandbox, type SandboxResolution } from './sandbox';
import { Supervisor } from './supervisor';

/**
 * The data plane of one platform process (docs/decisions/0120-data-plane.md): the runtime cache,
 * the supervisor, the edge and the site host over them. The composition root (`app/platform.ts`)
 * builds it where the publishing area's workers run, starts the edge's listener, offers the site
 * host to the areas as the `dataPlane` kernel port, and stops it last (workloads, then the edge).
 */

export interface DataPlaneOptions {
  /** The edge's port (`EDGE_PORT`, default 8082); 0 picks a free one (tests). */
  edgePort: number;
  /** The edge's listening address (the platform's `HOST`). */
  host: string;
  /** Where sites keep their content and database (`<DATA_DIR>/sites`). */
  sitesRoot: string;
  /**
   * The public address of a site, with `{slug}` (`SITES_BASE_URL`). Unset: `http://{slug}.sites.localhost:<edge port>/`
   * with the port the edge actually listens on.
   */
  sitesBaseUrl?: string;
  /** The runtime cache's root (default: `PLATFORM_RUNTIME_CACHE`, else the per-user cache). */
  cacheRoot?: string;
  /** How often the reconcile passes run again after boot, in ms (default 30 s). */
  reconcileIntervalMs?: number;
  /** Where a failed reconcile pass is reported (the platform's log). */
  onReconcileError?: (area: string, err: Error) => void;
  /** The runtimes this node runs (dataplane/runtimes/; default: Ghost). */
  drivers?: RuntimeDrivers;
  /** `EDGE_ENGINE` and `EDGE_NGINX_BINARY` are read here (default: the process's environment). */
  env?: NodeJS.ProcessEnv;
  /** The nginx binary the composition root installed (infra/nginx.ts), for `EDGE_ENGINE=nginx`. */
  nginxBinary?: string;
  /** Sleep and wake of idle sites (dataplane/sleep.ts); none when absent or its idle time is 0. */
  sleep?: SleepOptions;
  /** How long the edge holds a request for a sleeping site (default `EDGE_WAKE_TIMEOUT_MS`, else 30 s). */
  wakeTimeoutMs?: number;
}

/** What areas see of the data plane (the `dataPlane` kernel port). */
export interface DataPlanePort {
  readonly sites: SiteHost;
  /** The edge's own address, e.g. `http://127.0.0.1:8082` (clients connect here with a site's Host). */
  readonly edgeUrl: string;
  /** A site's public address from its slug (`SITES_BASE_URL`). */
  siteUrl(slug: string): string;
  /**
   * The one reconcile loop (dataplane/reconcile.ts): an area registers a pass that starts and routes
   * what its records say should run; it runs at registration (boot), periodically and on a kick.
   */
  readonly reconciler: ReconcileRegistry;
}

declare module '../core/ports' {
  interface KernelPorts {
    /** The data plane of this process (provided by the composition root where the publishing area's workers run). */
    dataPlane: DataPlanePort;
    /**
     * The same data plane whole, for the hosted node's agent (nodes/hosted.ts), whose executors use
     * the edge and the supervisor beside the site host; provided with `dataPlane`. Areas read `dataPlane`.
     */
    nodePlane: DataPlane;
  }
}

export class DataPlane implements DataPlanePort {
  readonly cache: RuntimeCache;
  readonly supervisor: Supervisor;
  readonly edge: Edge;
  readonly sites: SiteHost;
  readonly reconciler: Reconciler;
  /** The tenant sandbox workloads run in, or what is missing for it (dataplane/sandbox.ts). */
  readonly sandboxing: SandboxResolution;
  /** The edge's engine (`EDGE_ENGINE`) as resolved on this machine, with why (docs/decisions/0310-nginx-edge-engine.md). */
  readonly edgeEngine: EdgeEngineChoice;
  /** Sleep and wake of idle sites, when on. */
  readonly sleeper: SleepKeeper | null;
  private port: number | null = null;

  constructor(private readonly o: DataPlaneOptions) {
    this.cache = new RuntimeCache(o.cacheRoot ? { root: o.cacheRoot } : {});
    this.sandboxing = resolveSandbox();
    this.supervisor = new Supervisor({ sandbox: this.sandboxing.sandbox, sandboxRefusal: this.sandboxing.refusal });
    // nginx's folder beside the sites' (`<DATA_DIR>/edge-nginx/`); the node engine where nginx is missing.
    this.edgeEngine = chooseEdgeEngine({
      root: path.join(path.dirname(o.sitesRoot), 'edge-nginx'),
      port: o.edgePort,
      binary: o.nginxBinary,
      env: o.env,
    });
    const { engine, nginx } = this.edgeEngine;
    this.edge = new Edge({
      port: o.edgePort,
      host: o.host,
      engine,
      ...(nginx ? { nginx } : {}),
      ...(o.wakeTimeoutMs ? { wakeTimeoutMs: o.wakeTimeoutMs } : {}),
    });
    this.sites = new SiteHost({
      cache: this.cache,
      supervisor: this.supervisor,
      edge: this.edge,
      sitesRoot: o.sitesRoot,
      ...(o.drivers ? { drivers: o.drivers } : {}),
    });
    this.reconciler = new Reconciler({ intervalMs: o.reconcileIntervalMs, onError: o.onReconcileError });
    this.sleeper = o.sleep && o.sleep.idleMs > 0 ? new SleepKeeper(this.sites, this.edge, o.sleep) : null;
  }

  /** Starts the edge's listener; answers its address. */
  async start(): Promise<string> {
    this.port = await this.edge.listen();
    return this.edgeUrl;
  }

  get edgeUrl(): string {
    if (this.port === null) throw new Error('the edge is not listening');
    const host = this.o.host.includes(':') ? `[${this.o.host}]` : this.o.host;
    return `http://${host}:${this.port}`;
  }

  siteUrl(slug: string): string {
    const template = this.o.sitesBaseUrl ?? `http://{slug}.sites.localhost:${this.port ?? this.o.edgePort}/`;
    return template.replaceAll('{slug}', slug);
  }

  /** Stops every workload (SIGTERM, then SIGKILL) and closes the edge. */
  async stop(): Promise<void> {
    this.sleeper?.close();
    await this.reconciler.close();
    await this.supervisor.shutdown();
    await this.edge.close();
  }
}
