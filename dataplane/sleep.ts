import { totalmem } from 'node:os';
import { z } from 'zod';
import type { Edge } from './edge';
import { sleepMetrics } from './edge-common';
import type { SiteHost } from './sites';

/**
 * Sleep and wake (docs/decisions/0340-sleep-and-wake.md; docs/contracts.md, "Sleep and wake"): a
 * site that may sleep (its plan allows it) and got no request through the edge for the idle time is
 * stopped cleanly and its hosts marked `sleeping`; the edge holds the next request, the site host
 * wakes the site (one wake for every waiting request) and the edge answers it. Only awake sites
 * count against the node's memory: before a process is spawned, the least recently used awake
 * sites that may sleep are put to sleep until the new one fits. The hosted node and a customer's
 * node run the same keeper over their own data plane.
 */

export interface SleepOptions {
  /** No request for this long puts a site to sleep, in ms (`PUBLISHER_IDLE_SLEEP_MS`, default 15 min); 0: never. */
  idleMs: number;
  /** The memory the node gives awake sites, in MiB (their runtimes' floors count against it); null: unbounded. */
  memoryMb: number | null;
  /** How often idle sites are looked for, in ms (default a quarter of the idle time, between 1 s and 30 s). */
  sweepMs?: number;
  /** Where a failed sleep is reported. */
  log?: (line: string) => void;
}

/**
 * The node's sleep settings, declared once: the publishing area's settings include them (it admits
 * sites by the node's memory), and wherever a data plane runs reads them from the same declaration
 * (the platform process, a customer's `nodes agent`).
 */
export const nodeSleepSettings = z.object({
  /**
   * The memory this node gives hosted sites, in MiB: each hosted site reserves its runtime's memory
   * floor from it and a create that does not fit answers 409 `node_capacity_exhausted`
   * (docs/decisions/0158-site-resources.md). Unset: the machine's memory less 2 GiB for the
   * platform and its engines where sites really run; unbounded with the simulated executor.
   */
  PUBLISHER_NODE_MEMORY_MB: z.coerce.number().int().min(1).optional(),
  /**
   * A hosted site whose plan lets it sleep is stopped after this long without a request through the
   * edge and woken by its next one, in ms (default 15 min; 0: sites never sleep;
   * docs/decisions/0340-sleep-and-wake.md).
   */
  PUBLISHER_IDLE_SLEEP_MS: z.coerce.number().int().min(0).default(900_000),
});

/** The node's sleep settings from the environment (a bad value throws, naming the variable). */
function sleepSettingsFrom(env: NodeJS.ProcessEnv): z.infer<typeof nodeSleepSettings> {
  const blankless = Object.fromEntries(
    Object.keys(nodeSleepSettings.shape).flatMap((k) => (env[k]?.trim() ? [[k, env[k]!.trim()]] : [])),
  );
  const parsed = nodeSleepSettings.safeParse(blankless);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new Error(`${issue.path.join('.')}: ${issue.message} (got ${JSON.stringify(blankless[String(issue.path[0])])})`);
}

/** `PUBLISHER_IDLE_SLEEP_MS` from the environment (default 900000, 15 min; 0 never). */
export function idleSleepMsFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  return sleepSettingsFrom(env).PUBLISHER_IDLE_SLEEP_MS;
}

/**
 * The memory this node gives hosted sites, in MiB (`PUBLISHER_NODE_MEMORY_MB`).
 * Unset: the machine's memory less 2 GiB for the platform and its engines where sites really run, else unbounded (null).
 */
export function siteMemoryMb(configured: number | undefined, sitesRunHere: boolean): number | null {
  if (configured !== undefined) return configured;
  return sitesRunHere ? Math.max(0, Math.floor(totalmem() / 1048576) - 2048) : null;
}

/** `siteMemoryMb` from `PUBLISHER_NODE_MEMORY_MB` in the environment. */
export function siteMemoryMbFromEnv(env: NodeJS.ProcessEnv, sitesRunHere: boolean): number | null {
  return siteMemoryMb(sleepSettingsFrom(env).PUBLISHER_NODE_MEMORY_MB, sitesRunHere);
}

export class SleepKeeper {
  private readonly timer: NodeJS.Timeout | null;
  private sweeping: Promise<void> | null = null;

  constructor(
    private readonly sites: SiteHost,
    private readonly edge: Edge,
    private readonly o: SleepOptions,
  ) {
    if (o.idleMs <= 0) {
      this.timer = null;
      return;
    }
    edge.setWaker((owner) => (sites.isHosted(owner) ? this.wake(owner) : Promise.resolve()));
    sites.setBeforeSpawn((siteId) => this.makeRoom(siteId));
    const every = o.sweepMs ?? Math.min(30_000, Math.max(1_000, Math.floor(o.idleMs / 4)));
    this.timer = setInterval(() => void this.sweep(), every);
    this.timer.unref();
  }

  /** When the site was last active: its last request through the edge, or the platform's last doing (`SiteHost.awake`). */
  lastActive(siteId: string, activeAt: number): number {
    return Math.max(this.edge.lastRequestAt(siteId) ?? 0, activeAt);
  }

  /** Puts every site idle for the idle time to sleep (one pass at a time). */
  sweep(): Promise<void> {
    this.sweeping ??= this.sweepNow().finally(() => {
      this.sweeping = null;
    });
    return this.sweeping;
  }

  private async sweepNow(): Promise<void> {
    const now = Date.now();
    for (const s of this.sites.awake()) {
      if (!s.sleeps || this.edge.openConnections(s.siteId) > 0) continue;
      // A site still starting (not answering yet) is never idle.
      if (s.activeAt === 0 || now - this.lastActive(s.siteId, s.activeAt) < this.o.idleMs) continue;
      if (await this.answering(s.siteId)) continue;
      await this.put(s.siteId, 'idle');
    }
  }

  /** True while the site's process has a request under way (one longer than the idle time: not cut). */
  private async answering(siteId: string): Promise<boolean> {
    return ((await this.sites.requestsUnderWay(siteId)) ?? 0) > 0;
  }

  private async put(siteId: string, reason: 'idle' | 'capacity'): Promise<boolean> {
    try {
      const slept = await this.sites.sleep(siteId, reason);
      if (slept) sleepMetrics.sleeps.labels(reason).inc();
      return slept;
    } catch (e) {
      this.o.log?.(`sleep: site ${siteId} could not be put to sleep: ${(e as Error).message}`);
      return false;
    }
  }

  /** The wakes already counted: the site host hands every waiter of one wake the same promise. */
  private readonly counted = new WeakSet<Promise<void>>();

  /** Wakes the site for a held request; each wake is counted once, however many requests wait on it. */
  private wake(siteId: string): Promise<void> {
    const woke = this.sites.wake(siteId);
    if (this.sites.isAsleep(siteId) && !this.counted.has(woke)) {
      this.counted.add(woke);
      const t0 = process.hrtime.bigint();
      woke.then(
        () => {
          sleepMetrics.wakes.labels('woke').inc();
          sleepMetrics.wakeSeconds.observe(Number(process.hrtime.bigint() - t0) / 1e9);
        },
        () => sleepMetrics.wakes.labels('failed').inc(),
      );
    }
    return woke;
  }

  /**
   * Before `siteId`'s process is spawned: while the awake sites' floors and its own exceed the
   * node's memory, the least recently used awake site that may sleep (and has no step under way)
   * is put to sleep. When none can, the site starts anyway (a floor is a floor, not a reservation;
   * the platform's admission keeps the sites that never sleep within the node's memory).
   */
  async makeRoom(siteId: string): Promise<void> {
    if (this.o.memoryMb === null) return;
    const tried = new Set<string>();
    for (;;) {
      const others = this.sites.awake().filter((s) => s.siteId !== siteId);
      const used = others.reduce((sum, s) => sum + s.memoryMb, 0);
      if (used + this.sites.memoryOf(siteId) <= this.o.memoryMb) return;
      const lru = others
        .filter((s) => s.sleeps && !tried.has(s.siteId) && !this.sites.busy(s.siteId))
        .sort((a, b) => this.lastActive(a.siteId, a.activeAt) - this.lastActive(b.siteId, b.activeAt))[0];
      if (lru && ((await this.answering(lru.siteId)) || this.edge.openConnections(lru.siteId) > 0)) {
        // Answering a request or carrying a websocket: the next least recently used instead.
        tried.add(lru.siteId);
        continue;
      }
      if (!lru) {
        this.o.log?.(`sleep: no awake site can sleep to make room for ${siteId}; it starts beyond the node's memory`);
        return;
      }
      tried.add(lru.siteId);
      const at = new Date(this.lastActive(lru.siteId, lru.activeAt)).toISOString();
      const slept = await this.put(lru.siteId, 'capacity');
      this.o.log?.(
        `sleep: site ${lru.siteId} (last active ${at}) ${slept ? 'sleeps' : 'could not sleep'} to make room for ${siteId}`,
      );
    }
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
