import { randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { sleep } from '../../core/sleep';
import { DataPlane } from '../plane';
import { ReleaseHost, type ReleaseHostOptions } from '../releases';
import { SiteBackups } from '../site-backup';
import type { SleepOptions } from '../sleep';
import { AgentAuthError, AgentClient, type AgentTransport } from './client';
import { SiteDataExecutor } from './data-executor';
import { HeartbeatReport } from './heartbeat';
import { agentRecoveryParts, type PartCalls } from './recovery-parts';
import { type NodeExecutor, type NodeExecutorFactory, RealNodeExecutor, StepFailure } from './executors';
import { ReleaseExecutor, agentReleaseSource } from './release-executor';
import {
  type AgentReleaseTask,
  type AgentTask,
  type DesiredSite,
  type HeartbeatReply,
  MAX_EXTRAS_SITES,
  MAX_OBSERVED_REQUESTS,
  type SiteExtrasValue,
  type TaskOutcome,
} from './wire';

export { AgentAuthError, type AgentTransport } from './client';

/**
 * The node agent (docs/decisions/0170-node-agent.md): a foreground process on the customer's
 * machine that reaches the platform only over its public HTTP API, authenticated by the node token.
 * It heartbeats every 5 s, claims the tasks of the sites placed on its node, runs them with its
 * own data plane (runtime cache, supervisor, edge) and reports the outcome; after it starts, and
 * whenever the platform answers again after a silence, it reconciles: every site that should run
 * runs, without a client request.
 */

export interface NodeAgentOptions {
  /** The platform's REST bridge (`--api-url`, default http://127.0.0.1:8080). */
  apiUrl: string;
  token: string;
  /** Where the agent keeps its sites' files (`<dataDir>/sites/<site id>/`). */
  dataDir: string;
  /** A data plane that is already running (the platform's own): the agent uses it and leaves it running. */
  plane?: DataPlane;
  /**
   * `plane` is the platform process's own (the hosted node's in-process agent): the platform reads its
   * sites' processes and publishes their sleeps and wakes itself, so heartbeats carry neither.
   */
  platformPlane?: boolean;
  /** Instead of HTTP to `apiUrl` (the hosted agent inside the platform). */
  transport?: AgentTransport;
  /**
   * Runs the tasks of commerce releases (docs/decisions/0325-nodes-module.md, 0365) with a release host
   * of these options on the agent's plane, their bundles and environments read over the protocol.
   * Unset: the agent answers release tasks `unknown_step`.
   */
  releaseHost?: Omit<ReleaseHostOptions, 'supervisor' | 'edge'>;
  /** How many tasks (of different sites) run at once (default 1: one after another). */
  concurrency?: number;
  /** How long one claim waits for work (a long poll; default 20 s, 0: answer at once). */
  claimWaitMs?: number;
  /** The agent's edge port (`--edge-port`, default 8083); 0 picks a free one. */
  edgePort: number;
  host?: string;
  /**
   * The real executor (the runtime drivers on the agent's data plane), or one the caller makes on
   * that plane: a stand-in (dataplane/stand-in/simulated-executor.ts; decision 0380).
   */
  executor: 'real' | NodeExecutorFactory;
  /** Heartbeat period (docs/contracts.md, "The data plane": 5 s; the platform's answer may ask for another, as the hosted node's 2 s). */
  heartbeatMs?: number;
  /** The pause after a claim that found nothing or failed (default 1 s). */
  claimPollMs?: number;
  cacheRoot?: string;
  /** Sleep and wake of idle sites on the agent's own data plane (dataplane/sleep.ts); not used with `plane`. */
  sleep?: SleepOptions;
  log?: (line: string) => void;
}

export class NodeAgent {
  readonly session = randomUUID();
  readonly plane: DataPlane;
  readonly executor: NodeExecutor;
  /** Commerce releases' tasks (`releaseHost`), or null. */
  readonly releases: ReleaseExecutor | null;
  /** Hosted sites' data steps (the real executor; parts through the agent API, decision 0375), or null. */
  readonly data: SiteDataExecutor | null;
  nodeId: string | null = null;
  /**
   * On a leased node (the hosted pool, docs/decisions/0226-hosted-node-lease.md): whether this
   * process holds it. Null on a customer's node, which has no lease.
   */
  holding: boolean | null = null;
  /** When this process last took the lease over (ms since the epoch), for the takeover figure. */
  tookOverAt: number | null = null;
  private heartbeatMs: number;
  private stopped = false;
  private readonly stopping = new AbortController();
  private readonly client: AgentClient;
  private readonly ownPlane: boolean;
  private readonly inflight = new Set<Promise<void>>();
  private fatal: ((e: Error) => void) | null = null;
  private readonly finished: Promise<void>;
  private chain: Promise<unknown> = Promise.resolve();
  private readonly log: (line: string) => void;
  /** What a heartbeat carries beyond the edge port: sleeps and wakes (decision 0350), sites' processes (0385). */
  private readonly report: HeartbeatReport;
  /** The sites' extras read for the reconcile pass under way (one call for its sites), else null. */
  private extrasOfPass: Map<string, SiteExtrasValue> | null = null;

  constructor(private readonly o: NodeAgentOptions) {
    this.log = o.log ?? (() => undefined);
    this.heartbeatMs = o.heartbeatMs ?? 5_000;
    this.ownPlane = !o.plane;
    this.client = new AgentClient({ apiUrl: o.apiUrl, token: o.token, transport: o.transport, stopping: this.stopping.signal });
    this.plane =
      o.plane ??
      new DataPlane({
        edgePort: o.edgePort,
        host: o.host ?? '127.0.0.1',
        sitesRoot: path.join(o.dataDir, 'sites'),
        ...(o.cacheRoot ? { cacheRoot: o.cacheRoot } : {}),
        ...(o.sleep ? { sleep: o.sleep } : {}),
      });
    this.executor =
      o.executor === 'real' ? new RealNodeExecutor(this.plane, (siteId) => this.siteExtras(siteId)) : o.executor(this.plane);
    this.releases = o.releaseHost
      ? new ReleaseExecutor(
          new ReleaseHost({
            // An agent with no sinks of its own (outside the platform's process) reports what its host observed.
            ...(o.releaseHost.onAccess || o.releaseHost.onDegraded ? {} : this.observationsToPlatform()),
            ...o.releaseHost,
            edge: this.plane.edge,
            supervisor: this.plane.supervisor,
          }),
          agentReleaseSource({ get: (p) => this.client.call('GET', p), download: (p, file) => this.client.download(p, file) }),
        )
      : null;
    // A point's parts go and come through the agent API's part calls of the task (decision 0375),
    // resumed after a break (decision 0390).
    const parts: PartCalls = {
      bytes: (p, from) => this.client.bytes(p, this.client.transferSignal(), from),
      upload: (p, u) => this.client.call('POST', p, u),
      get: (p) => this.client.call('GET', p),
      log: (line) => this.log(line),
    };
    this.data =
      o.executor === 'real'
        ? new SiteDataExecutor(
            this.plane.sites,
            (taskId) => new SiteBackups(agentRecoveryParts(parts, taskId, path.join(o.dataDir, 'parts'))),
            (siteId) => this.siteExtras(siteId),
          )
        : null;
    this.report = new HeartbeatReport(this.plane.sites, !o.platformPlane, this.log);
    this.finished = new Promise<void>((resolve, reject) => {
      this.fatal = (e) => (e instanceof AgentAuthError ? reject(e) : resolve());
    });
    this.finished.catch(() => undefined);
  }

  /** Settles when the agent stops: rejects with AgentAuthError when the platform refused its token. */
  get done(): Promise<void> {
    return this.finished;
  }

  get edgeUrl(): string {
    return this.plane.edgeUrl;
  }

  /** Opens the edge, checks the token with a first heartbeat (AgentAuthError when refused), reconciles, then runs. */
  async start(): Promise<void> {
    if (this.ownPlane) {
      await this.reapOrphans();
      await this.plane.start();
    }
    const port = Number(new URL(this.plane.edgeUrl).port);
    for (;;) {
      try {
        const hb = await this.beat(port);
        this.nodeId = hb.node_id;
        this.log(
          `node ${hb.name} (${hb.node_id}) connected; edge ${this.plane.edgeUrl}` +
            (this.holding === false ? '; another agent holds it: standing by' : ''),
        );
        break;
      } catch (e) {
        if (e instanceof AgentAuthError) {
          if (this.ownPlane) await this.plane.stop();
          throw e;
        }
        this.log(`the platform does not answer (${(e as Error).message}); retrying`);
        await sleep(2_000);
      }
    }
    // On the platform's own plane the data plane's reconcile loop runs the first pass (nodes/hosted.ts).
    if (this.holding !== false && this.ownPlane) await this.serial(() => this.reconcile());
    void this.heartbeats(port);
    void this.work();
  }

  /** Brings the sites to the states the platform holds for them, where this agent runs them (the data plane's reconcile pass). */
  async reconcileNow(): Promise<void> {
    if (this.stopped || this.nodeId === null || this.holding === false) return;
    await this.serial(() => this.reconcile());
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.stopping.abort();
    await this.chain.catch(() => undefined);
    await Promise.allSettled([...this.inflight]);
    if (this.holding) await this.client.call('POST', '/lease/release', { session: this.session }).catch(() => undefined);
    await this.executor.close();
    await this.releases?.close();
    if (this.ownPlane) await this.plane.stop();
    this.fatal?.(new Error('stopped'));
  }

  /**
   * One heartbeat. On a leased node its answer says whether this process holds the node: taking it
   * over reconciles (the sites the holder ran start here), losing it stops the sites here.
   */
  private async beat(port: number) {
    const hb = await this.sendHeartbeat(port);
    if (this.o.heartbeatMs === undefined && hb.heartbeat_interval_ms) this.heartbeatMs = hb.heartbeat_interval_ms;
    if (hb.lease) {
      const held = hb.lease === 'held';
      const was = this.holding;
      this.holding = held;
      if (held && was === false) {
        this.tookOverAt = Date.now();
        this.log('took the node over (its holder stopped renewing); reconciling');
        void this.serial(() => this.reconcile());
      } else if (held && was === null) this.tookOverAt = Date.now();
      else if (!held && was) {
        this.log('another agent holds the node now; stopping the sites here');
        void this.serial(() => this.executor.stopAll());
      }
    }
    return hb;
  }

  /**
   * The heartbeat call with what it carries (./heartbeat.ts): with the real executor on a plane not
   * the platform's (a customer's node, or the hosted node's agent outside the platform while it holds
   * the node), its sites' processes too (decision 0385).
   */
  private sendHeartbeat(port: number): Promise<HeartbeatReply> {
    const processes = this.executor.kind === 'real' && this.nodeId !== null && !this.o.platformPlane && this.holding !== false;
    return this.report.send(
      (body) => this.client.call<HeartbeatReply>('POST', '/heartbeat', body),
      { edge_port: port, session: this.session },
      processes,
    );
  }

  private async heartbeats(port: number): Promise<void> {
    let failing = false;
    while (!this.stopped) {
      await sleep(this.heartbeatMs, this.stopping.signal).catch(() => undefined);
      if (this.stopped) return;
      try {
        await this.beat(port);
        if (failing && this.holding !== false) {
          this.log('the platform answers again; reconciling');
          void this.serial(() => this.reconcile());
        }
        failing = false;
      } catch (e) {
        if (e instanceof AgentAuthError) return this.die(e);
        if (!failing) this.log(`heartbeat failed: ${(e as Error).message}`);
        failing = true;
      }
    }
  }

  private async work(): Promise<void> {
    const waitMs = this.o.claimWaitMs ?? 20_000;
    const concurrency = Math.max(1, this.o.concurrency ?? 1);
    while (!this.stopped) {
      if (this.holding === false) {
        // A standby asks for no work: it takes the node over at a heartbeat.
        await sleep(this.heartbeatMs, this.stopping.signal).catch(() => undefined);
        continue;
      }
      let task: AgentTask | AgentReleaseTask | null = null;
      let failed = false;
      try {
        task = (
          await this.client.call<{ task: AgentTask | AgentReleaseTask | null }>(
            'POST',
            '/tasks/claim',
            { session: this.session, wait_ms: waitMs },
            waitMs,
          )
        ).task;
      } catch (e) {
        if (e instanceof AgentAuthError) return this.die(e);
        failed = true;
      }
      if (this.stopped) return;
      if (!task) {
        // A long poll that ran its course asks again at once; an empty quick answer or a failure waits.
        if (failed || waitMs === 0) await sleep(this.o.claimPollMs ?? 1_000, this.stopping.signal).catch(() => undefined);
        continue;
      }
      if (concurrency === 1) {
        await this.serial(() => this.runTask(task));
        continue;
      }
      // Tasks of different sites at once (the engine runs one operation per site, one step at a
      // time, so two tasks here never touch the same site).
      const run = this.runTask(task).finally(() => this.inflight.delete(run));
      this.inflight.add(run);
      while (this.inflight.size >= concurrency && !this.stopped) await Promise.race(this.inflight);
    }
  }

  private async runTask(task: AgentTask | AgentReleaseTask): Promise<void> {
    const what = 'release' in task ? `release ${task.release.releases[0]?.releaseId ?? '(all)'}` : `site ${task.site.slug}`;
    this.log(`${task.operation_type}/${task.step} of ${what}`);
    let last = 0;
    const progress = (detail: string) => {
      if (Date.now() - last < 1_000) return;
      last = Date.now();
      void this.client
        .call('POST', `/tasks/${encodeURIComponent(task.id)}/progress`, { session: this.session, detail })
        .catch(() => undefined);
    };
    let outcome: TaskOutcome;
    try {
      const result = await this.runStep(task, progress);
      outcome = { ok: true, result };
    } catch (e) {
      const f = e instanceof StepFailure ? e : new StepFailure('node_step_failed', (e as Error).message);
      this.log(`${task.step} failed: ${f.code}: ${f.message}`);
      outcome = { ok: false, code: f.code, message: f.message.slice(0, 2000), retriable: f.retriable };
    }
    // The outcome must reach the platform: retried until it answers (a task held by another process is dropped).
    while (!this.stopped) {
      try {
        await this.client.call('POST', `/tasks/${encodeURIComponent(task.id)}/result`, { session: this.session, outcome });
        return;
      } catch (e) {
        if (e instanceof AgentAuthError) return this.die(e);
        if ((e as { code?: string }).code === 'task_not_held') return;
        await sleep(1_000);
      }
    }
  }

  private runStep(task: AgentTask | AgentReleaseTask, progress: (detail: string) => void) {
    // A data step with its work (a hosted site's recovery point, restore, rollback): the data executor.
    if (!('release' in task) && task.data && this.executor.kind === 'real') {
      if (!this.data) throw new StepFailure('unknown_step', `this node keeps no recovery points (${task.step})`);
      return this.data.run(task);
    }
    if (!('release' in task)) return this.executor.run(task, progress);
    if (!this.releases) throw new StepFailure('unknown_step', 'this node runs no commerce releases');
    return this.releases.run(task);
  }

  /** Brings every site placed here to the state the platform holds for it. */
  private async reconcile(): Promise<void> {
    let sites: DesiredSite[];
    try {
      sites = (await this.client.call<{ sites: DesiredSite[] }>('GET', '/sites')).sites;
    } catch (e) {
      this.log(`reconcile: ${(e as Error).message}`);
      return;
    }
    // The extras of the sites that should run, in one call per MAX_EXTRAS_SITES (not one per site).
    const up = sites.filter((s) => s.state === 'running').map((s) => s.site.siteId);
    if (this.executor.kind === 'real' && up.length)
      this.extrasOfPass = await this.fetchExtras(up).catch((e: unknown) => {
        this.log(`reconcile: the sites' extras: ${(e as Error).message}`);
        return null;
      });
    try {
      for (const { site, state } of sites) {
        try {
          const did = await this.executor.ensure(site, state);
          if (did !== 'unchanged') this.log(`reconcile: site ${site.slug} ${did}`);
        } catch (e) {
          this.log(`reconcile: site ${site.slug} could not be brought to ${state}: ${(e as Error).message}`);
        }
      }
    } finally {
      this.extrasOfPass = null;
    }
  }

  /**
   * What a site's process starts with beyond its spec (the hosted pool's mail settings and MySQL
   * database, decision 0365): read from the platform for a site placed on this node; none for a
   * customer's node's sites.
   */
  private async siteExtras(siteId: string): Promise<SiteExtrasValue | undefined> {
    return this.extrasOfPass?.get(siteId) ?? (await this.fetchExtras([siteId])).get(siteId);
  }

  private async fetchExtras(siteIds: string[]): Promise<Map<string, SiteExtrasValue>> {
    const out = new Map<string, SiteExtrasValue>();
    for (let i = 0; i < siteIds.length; i += MAX_EXTRAS_SITES) {
      const site_ids = siteIds.slice(i, i + MAX_EXTRAS_SITES);
      const got = await this.client
        .call<{ extras: Record<string, SiteExtrasValue> }>('POST', '/sites/extras', { site_ids })
        .catch((e: unknown) => {
          // A platform older than the call (the bridge: `route_not_found`) gave a customer's node none.
          if ((e as { code?: string }).code === 'route_not_found') return { extras: {} };
          throw e;
        });
      for (const [id, extras] of Object.entries(got.extras)) out.set(id, extras);
    }
    return out;
  }

  private get pidFile(): string {
    return path.join(this.o.dataDir, 'workload-pids.json');
  }

  /**
   * Workloads a killed predecessor left running (a `kill -9` of the agent does not reach its
   * children): stopped before this agent starts the sites again on the same files.
   */
  private async reapOrphans(): Promise<void> {
    const pids = (await readFile(this.pidFile, 'utf8').then(JSON.parse, () => [])) as number[];
    for (const pid of pids) {
      const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
      if (!cmd.includes('node')) continue;
      try {
        process.kill(pid, 'SIGKILL');
        this.log(`stopped workload ${pid} left by an earlier agent`);
      } catch {
        // gone already
      }
    }
  }

  /** Records the workloads' pids after each change, for `reapOrphans` of the next start. */
  private async recordPids(): Promise<void> {
    if (!this.ownPlane) return;
    const pids = this.plane.supervisor.list().flatMap((w) => (w.pid ? [w.pid] : []));
    await mkdir(this.o.dataDir, { recursive: true });
    await writeFile(this.pidFile, JSON.stringify(pids)).catch(() => undefined);
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = () => fn().finally(() => this.recordPids());
    const next = this.chain.then(run, run);
    this.chain = next.catch(() => undefined);
    return next;
  }

  private die(e: Error): void {
    this.log(e.message);
    // The first settlement wins: the agent's end is the refused token, not the stop that follows.
    this.fatal?.(e);
    void this.stop();
  }

  /**
   * The release host's sinks as calls (`POST /releases/observations`, decision 0365): the requests its
   * edge served on releases' addresses (storefront analytics; a batch the platform does not take is
   * dropped, as the in-process sink drops one it cannot insert) and releases past the degraded rule.
   */
  private observationsToPlatform(): Pick<ReleaseHostOptions, 'onAccess' | 'onDegraded'> {
    const send = (body: object) => this.client.call('POST', '/releases/observations', body);
    return {
      onAccess: async (batch) => {
        for (let i = 0; i < batch.length; i += MAX_OBSERVED_REQUESTS) {
          const access = batch.slice(i, i + MAX_OBSERVED_REQUESTS).map((e) => ({
            project_id: e.projectId,
            release_id: e.releaseId,
            at: e.at.toISOString(),
            status: e.status,
            ms: e.ms,
          }));
          await send({ access });
        }
      },
      onDegraded: (releaseId, w) =>
        void send({ degraded: [{ release_id: releaseId, requests: w.requests, errors: w.errors }] }).catch((e: unknown) =>
          this.log(`release ${releaseId} past the degraded rule, not recorded: ${(e as Error).message}`),
        ),
    };
  }
}
