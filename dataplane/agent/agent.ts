import { randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { sleep } from '../../core/sleep';
import { DataPlane } from '../plane';
import {
  type AgentSite,
  type AgentTask,
  type NodeExecutor,
  RealNodeExecutor,
  SimulatedNodeExecutor,
  StepFailure,
} from './executors';

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
  /** The agent's edge port (`--edge-port`, default 8083); 0 picks a free one. */
  edgePort: number;
  host?: string;
  executor: 'real' | 'simulated';
  /** Heartbeat period (CONTRACTS.md: 5 s). */
  heartbeatMs?: number;
  /** How often an idle agent asks for work (default 1 s). */
  claimPollMs?: number;
  simulatedStepDelayMs?: number;
  cacheRoot?: string;
  log?: (line: string) => void;
}

/** The platform refused the token (forged, unknown or revoked): the agent stops. */
export class AgentAuthError extends Error {}

interface Envelope<T> {
  success: boolean;
  data?: T;
  error?: { code: string; message: string };
}

export class NodeAgent {
  readonly session = randomUUID();
  readonly plane: DataPlane;
  readonly executor: NodeExecutor;
  nodeId: string | null = null;
  private stopped = false;
  private fatal: ((e: Error) => void) | null = null;
  private readonly finished: Promise<void>;
  private chain: Promise<unknown> = Promise.resolve();
  private readonly log: (line: string) => void;

  constructor(private readonly o: NodeAgentOptions) {
    this.log = o.log ?? (() => undefined);
    this.plane = new DataPlane({
      edgePort: o.edgePort,
      host: o.host ?? '127.0.0.1',
      sitesRoot: path.join(o.dataDir, 'sites'),
      ...(o.cacheRoot ? { cacheRoot: o.cacheRoot } : {}),
    });
    this.executor =
      o.executor === 'real' ? new RealNodeExecutor(this.plane) : new SimulatedNodeExecutor(this.plane, o.simulatedStepDelayMs);
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
    await this.reapOrphans();
    await this.plane.start();
    const port = Number(new URL(this.plane.edgeUrl).port);
    for (;;) {
      try {
        const hb = await this.call<{ node_id: string; name: string }>('POST', '/heartbeat', { edge_port: port });
        this.nodeId = hb.node_id;
        this.log(`node ${hb.name} (${hb.node_id}) connected; edge ${this.plane.edgeUrl}`);
        break;
      } catch (e) {
        if (e instanceof AgentAuthError) {
          await this.plane.stop();
          throw e;
        }
        this.log(`the platform does not answer (${(e as Error).message}); retrying`);
        await sleep(2_000);
      }
    }
    await this.serial(() => this.reconcile());
    void this.heartbeats(port);
    void this.work();
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.chain.catch(() => undefined);
    await this.executor.close();
    await this.plane.stop();
    this.fatal?.(new Error('stopped'));
  }

  private async heartbeats(port: number): Promise<void> {
    let failing = false;
    while (!this.stopped) {
      await sleep(this.o.heartbeatMs ?? 5_000);
      if (this.stopped) return;
      try {
        await this.call('POST', '/heartbeat', { edge_port: port });
        if (failing) {
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
    while (!this.stopped) {
      let task: AgentTask | null = null;
      try {
        task = (await this.call<{ task: AgentTask | null }>('POST', '/tasks/claim', { session: this.session })).task;
      } catch (e) {
        if (e instanceof AgentAuthError) return this.die(e);
      }
      if (!task) {
        await sleep(this.o.claimPollMs ?? 1_000);
        continue;
      }
      await this.serial(() => this.runTask(task));
    }
  }

  private async runTask(task: AgentTask): Promise<void> {
    this.log(`${task.operation_type}/${task.step} of site ${task.site.slug}`);
    let last = 0;
    const progress = (detail: string) => {
      if (Date.now() - last < 1_000) return;
      last = Date.now();
      void this.call('POST', `/tasks/${encodeURIComponent(task.id)}/progress`, { session: this.session, detail }).catch(
        () => undefined,
      );
    };
    let outcome: Record<string, unknown>;
    try {
      const result = await this.executor.run(task, progress);
      outcome = { ok: true, result };
    } catch (e) {
      const f = e instanceof StepFailure ? e : new StepFailure('node_step_failed', (e as Error).message);
      this.log(`${task.step} failed: ${f.code}: ${f.message}`);
      outcome = { ok: false, code: f.code, message: f.message.slice(0, 2000), retriable: f.retriable };
    }
    // The outcome must reach the platform: retried until it answers (a task held by another process is dropped).
    while (!this.stopped) {
      try {
        await this.call('POST', `/tasks/${encodeURIComponent(task.id)}/result`, { session: this.session, outcome });
        return;
      } catch (e) {
        if (e instanceof AgentAuthError) return this.die(e);
        if ((e as { code?: string }).code === 'task_not_held') return;
        await sleep(1_000);
      }
    }
  }

  /** Brings every site placed here to the state the platform holds for it. */
  private async reconcile(): Promise<void> {
    let sites: Array<{ site: AgentSite; state: 'running' | 'stopped' }>;
    try {
      sites = (await this.call<{ sites: Array<{ site: AgentSite; state: 'running' | 'stopped' }> }>('GET', '/sites')).sites;
    } catch (e) {
      this.log(`reconcile: ${(e as Error).message}`);
      return;
    }
    for (const { site, state } of sites) {
      try {
        const did = await this.executor.ensure(site, state);
        if (did !== 'unchanged') this.log(`reconcile: site ${site.slug} ${did}`);
      } catch (e) {
        this.log(`reconcile: site ${site.slug} could not be brought to ${state}: ${(e as Error).message}`);
      }
    }
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

  private async call<T>(method: 'GET' | 'POST', p: string, body?: unknown): Promise<T> {
    const res = await fetch(`${this.o.apiUrl.replace(/\/+$/, '')}/v1/node-agent${p}`, {
      method,
      // Not `Authorization`: the bridge reads that as an API key (subgraphs/publisher/node-agent-api.ts).
      headers: { 'x-node-token': this.o.token, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(10_000),
    });
    const env = (await res.json().catch(() => null)) as Envelope<T> | null;
    if (res.status === 401) throw new AgentAuthError('the platform refused the node token (unknown, forged or revoked)');
    if (!res.ok || !env?.success) {
      const err = new Error(env?.error?.message ?? `HTTP ${res.status}`) as Error & { code?: string };
      err.code = env?.error?.code;
      throw err;
    }
    return env.data as T;
  }
}
