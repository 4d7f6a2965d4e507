import type { DataPlane } from '../plane';
import type { HostedSite } from '../sites';
import type { AgentSite, AgentTask, SiteExtrasValue } from './wire';

/**
 * What a node agent runs a step with (docs/decisions/0170-node-agent.md): the real executor acts on
 * the agent's own data plane (runtime cache, supervisor, edge, site host over the runtime drivers:
 * the same modules the hosted pool uses); the simulated one (dataplane/stand-in/simulated-executor.ts)
 * stands in with a small HTTP server per site behind the same edge, for fast tests, passed in by
 * whoever starts the agent (docs/decisions/0380).
 */

/** A step failure the platform records with its code (retriable ones are retried by the operation engine). */
export class StepFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly retriable = false,
  ) {
    super(message);
  }
}

export interface NodeExecutor {
  readonly kind: 'real' | 'simulated';
  /**
   * Runs one step; answers what the platform records (configure_site: the admin access, whose
   * `…key`/`…password` fields the platform seals before storing: nodes/tasks.ts, sealTaskResult).
   */
  run(task: AgentTask, progress: (line: string) => void): Promise<Record<string, unknown> | null>;
  /** Reconcile: the site should be in `state`; brings it there when it is not (a restarted agent). */
  ensure(site: AgentSite, state: 'running' | 'stopped'): Promise<'started' | 'unchanged' | 'stopped'>;
  /** Sites this process runs now. */
  running(): string[];
  /** Stops every site here (an agent that lost the hosted node's lease to another). */
  stopAll(): Promise<void>;
  close(): Promise<void>;
}

/** An executor other than the real one (a stand-in), made on the agent's data plane by the agent. */
export type NodeExecutorFactory = (plane: DataPlane) => NodeExecutor;

/**
 * What a site's process starts with beyond the task's site spec, read where the platform keeps it:
 * the hosted pool's mail configuration and the site's MySQL database (docs/decisions/0220). Only the
 * hosted node's in-process agent has it; a customer's node runs its sites on SQLite, unconfigured.
 */
export type SiteExtras = (siteId: string) => Promise<SiteExtrasValue | undefined>;

/** The site as the site host starts it: the task's spec and what the platform keeps beside it (extras). */
export function hosted(site: AgentSite, extras?: SiteExtrasValue): HostedSite {
  return {
    siteId: site.siteId,
    runtime: { name: site.runtime.name, version: site.runtime.version, integrity: site.runtime.integrity },
    url: site.url,
    hosts: site.hosts,
    memoryMb: site.runtime.memoryFloorMb,
    sleeps: site.sleeps === true,
    ...(extras?.config ? { config: extras.config } : {}),
    ...(extras?.database ? { database: extras.database } : {}),
  };
}

function sameConfig(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  const norm = (c: Record<string, string> | undefined) =>
    JSON.stringify(Object.entries(c ?? {}).sort(([x], [y]) => (x < y ? -1 : 1)));
  return norm(a) === norm(b);
}

async function guard<T>(code: string, fn: () => Promise<T>, retriable = false): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof StepFailure) throw e;
    throw new StepFailure(code, (e as Error).message, retriable);
  }
}

/**
 * The node's own data plane: each site's runtime driver (dataplane/runtimes/) from the runtime
 * cache, supervised in its sandbox, behind the agent's edge. The steps are the same for every
 * runtime; the driver says what is particular.
 */
export class RealNodeExecutor implements NodeExecutor {
  readonly kind = 'real' as const;
  constructor(
    private readonly plane: DataPlane,
    /** What a site's process starts with (the hosted pool's mail and database); none on a customer's node. */
    private readonly siteExtras?: SiteExtras,
  ) {}

  private async wanted(site: AgentSite): Promise<HostedSite> {
    return hosted(site, await this.siteExtras?.(site.siteId));
  }

  async run(task: AgentTask, progress: (line: string) => void): Promise<Record<string, unknown> | null> {
    const host = this.plane.sites;
    const site = task.site;
    const onProgress = (p: { phase: string; detail: string }) => progress(`${p.phase}: ${p.detail}`);
    switch (task.step) {
      case 'pull_image':
        await guard('image_pull_failed', () => host.pullRuntime(hosted(site).runtime, onProgress), true);
        return null;
      case 'start_runtime':
      case 'rollback':
        if (host.isHosted(site.siteId) && host.releaseOf(site.siteId) === site.runtime.version && task.step !== 'rollback')
          await guard('site_unhealthy', () => host.resume(site.siteId));
        else {
          const wanted = await this.wanted(site);
          await guard('site_unhealthy', () => host.start(wanted, onProgress).then(() => undefined));
        }
        return null;
      case 'configure_site': {
        // The site's driver sets it up (Ghost: the owner and the platform's integration); the
        // platform seals what comes back before it stores it.
        const ownerEmail = `owner@${new URL(site.url).hostname}`;
        const access = await guard('site_setup_failed', () =>
          host.configure(site.siteId, { name: `${site.name} owner`, email: ownerEmail, title: site.name }),
        );
        return { owner_email: ownerEmail, ...access };
      }
      case 'health_check':
        await guard('health_check_failed', () => host.healthCheck(site.siteId).then(() => undefined));
        return null;
      case 'drain_traffic':
        if (host.isHosted(site.siteId)) host.drain(site.siteId);
        return null;
      case 'stop_runtime':
        if (host.isHosted(site.siteId)) await host.stop(site.siteId);
        return null;
      case 'delete_site':
        await host.remove(site.siteId);
        return null;
      default:
        throw new StepFailure('unknown_step', `the node agent has no step ${task.step}`);
    }
  }

  /**
   * Reconcile of one site (docs/decisions/0155-site-reconcile.md, now the agent's for the hosted pool
   * too): a site that should run and runs this release is re-routed at its current hosts (a verified
   * custom domain) and restarted only when its configuration (mail) changed; otherwise it is started.
   */
  async ensure(site: AgentSite, state: 'running' | 'stopped') {
    const host = this.plane.sites;
    const asleep = host.isHosted(site.siteId) && host.isAsleep(site.siteId);
    const up = asleep || (host.isHosted(site.siteId) && host.metadata(site.siteId).state === 'running');
    if (state === 'stopped') {
      if (!up) return 'unchanged' as const;
      await host.stop(site.siteId);
      return 'stopped' as const;
    }
    const wanted = await this.wanted(site);
    // A sleeping site counts as running: its next request wakes it (dataplane/sleep.ts).
    if (up && host.releaseOf(site.siteId) === site.runtime.version) {
      host.setHosts(site.siteId, wanted.hosts);
      if (sameConfig(host.configOf(site.siteId), wanted.config)) return 'unchanged' as const;
    }
    await host.start(wanted);
    return 'started' as const;
  }

  running(): string[] {
    const host = this.plane.sites;
    return [...this.plane.edge.table().values()].flatMap((r) =>
      r.owner && r.state === 'running' && host.isHosted(r.owner) ? [r.owner] : [],
    );
  }

  async stopAll(): Promise<void> {
    for (const id of this.running()) await this.plane.sites.stop(id).catch(() => undefined);
  }

  async close(): Promise<void> {}
}
