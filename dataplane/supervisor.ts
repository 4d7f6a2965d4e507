import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { resolveSandbox, type Sandbox, type SandboxedLaunch, type SandboxSpec } from './sandbox';
import { parentWatchFile } from './supervisor-preload';

/**
 * The process supervisor of the data plane (docs/decisions/0120-data-plane.md): one child process per
 * workload, each with its own port (allocated on `add`, released on `remove`), environment and
 * working directory. A process that exits without being asked to is restarted after an exponential
 * backoff; one that keeps crashing is given up on (`failed`). State, restart count and last exit are
 * readable for a site's metadata. A child never outlives this process, even one killed with SIGKILL
 * (`supervisor-preload.ts`, decision 0245).
 */

export type WorkloadState = 'stopped' | 'running' | 'backoff' | 'stopping' | 'failed';

export interface WorkloadSpec {
  id: string;
  /** Node script to run (a path, relative to `cwd` or absolute) and its arguments. */
  script: string;
  args?: string[];
  cwd: string;
  /** The environment, built once the port is known (`PORT` is always set as well). */
  env?: Record<string, string> | ((port: number) => Record<string, string>);
  /** V8 old-space ceiling in MiB (`--max-old-space-size`): the runtime's memory floor or a plan's limit. */
  memoryMb?: number;
  /** Use this port instead of allocating one (it is still reserved and released with the workload). */
  port?: number;
  /**
   * How the workload is isolated (dataplane/sandbox.ts): on a supervisor with a sandbox it runs
   * inside it, reached on its unix socket; without one (development with the sandbox off) as before.
   */
  sandbox?: SandboxSpec;
  /** The executable when it is not a Node script (`script` is then its first argument list). */
  command?: string;
}

export interface WorkloadExit {
  code: number | null;
  signal: string | null;
  at: string;
  /** `oom`: the kernel ended it for going over its memory limit. */
  reason?: 'oom';
}

export interface WorkloadStatus {
  id: string;
  state: WorkloadState;
  port: number;
  /** The unix socket the workload serves on when it runs in the sandbox (connect here, not to `port`). */
  socketPath: string | null;
  /** The uid it runs as (sandboxed), else null. */
  uid: number | null;
  pid: number | null;
  /** Restarts after a crash since the workload was added (a requested restart is not counted). */
  restarts: number;
  lastExit: WorkloadExit | null;
  startedAt: string | null;
  /** When the next automatic restart is due, while in `backoff`. */
  nextRestartAt: string | null;
  /** Resident memory of the process, when the system reports it. */
  rssBytes: number | null;
}

export interface SupervisorOptions {
  /** First backoff delay after a crash (default 1 s); doubles per consecutive crash up to `maxBackoffMs`. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** A run that lasted this long resets the backoff (default 60 s). */
  stableAfterMs?: number;
  /** Consecutive crashes after which the workload is `failed` and left alone (default 10). */
  maxConsecutiveCrashes?: number;
  /** How long a stop waits after SIGTERM before SIGKILL (default 10 s). */
  stopTimeoutMs?: number;
  /** Lines of output kept per workload (default 200). */
  logLines?: number;
  /** The Node executable children run with (default: this process's). */
  nodePath?: string;
  /**
   * The tenant sandbox (dataplane/sandbox.ts; default: `resolveSandbox()`'s); null runs workloads
   * unisolated (development only).
   */
  sandbox?: Sandbox | null;
  /** Without a sandbox: the error that refuses a tenant workload (production; default `resolveSandbox()`'s). */
  sandboxRefusal?: string | null;
}

interface Workload {
  spec: WorkloadSpec;
  port: number;
  state: WorkloadState;
  child: ChildProcess | null;
  restarts: number;
  consecutiveCrashes: number;
  lastExit: WorkloadExit | null;
  startedAt: number | null;
  nextRestartAt: number | null;
  timer: NodeJS.Timeout | null;
  log: string[];
  /** Resolves when the current child has exited. */
  exited: Promise<void> | null;
  /** The sandboxed launch of the current child. */
  launch: SandboxedLaunch | null;
  /** Bumped by every spawn and stop: a launch still being prepared for an older one is dropped. */
  generation: number;
}

/** Where to reach a workload: its unix socket when sandboxed, else its loopback port (an edge route's target). */
export function endpointOf(st: WorkloadStatus): { host: string; port: number; socketPath?: string } {
  return st.socketPath ? { host: '127.0.0.1', port: st.port, socketPath: st.socketPath } : { host: '127.0.0.1', port: st.port };
}

/** Asks the system for a free port on the loopback interface. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (addr && typeof addr === 'object' ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/** The resident set size of a process from `/proc` (Linux); null elsewhere or when it is gone. */
export function rssOf(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/**
 * Workloads never outlive the platform process that supervises them: an exit without `shutdown`
 * (a crash, a test runner's forced exit) would otherwise leave them running and holding their ports.
 */
const LIVE = new Set<Supervisor>();
process.once('exit', () => {
  for (const s of LIVE) s.killAll();
});

export class Supervisor extends EventEmitter {
  private readonly workloads = new Map<string, Workload>();
  private readonly reservedPorts = new Set<number>();
  private readonly o: Required<Omit<SupervisorOptions, 'sandbox' | 'sandboxRefusal'>>;
  readonly sandbox: Sandbox | null;
  private readonly sandboxRefusal: string | null;

  constructor(opts: SupervisorOptions = {}) {
    super();
    this.o = {
      initialBackoffMs: opts.initialBackoffMs ?? 1_000,
      maxBackoffMs: opts.maxBackoffMs ?? 60_000,
      stableAfterMs: opts.stableAfterMs ?? 60_000,
      maxConsecutiveCrashes: opts.maxConsecutiveCrashes ?? 10,
      stopTimeoutMs: opts.stopTimeoutMs ?? 10_000,
      logLines: opts.logLines ?? 200,
      nodePath: opts.nodePath ?? process.execPath,
    };
    // Unset: the sandbox when it can be set up (dataplane/sandbox.ts); null turns it off for this supervisor.
    const resolved = opts.sandbox === undefined ? resolveSandbox() : null;
    this.sandbox = resolved ? resolved.sandbox : (opts.sandbox ?? null);
    this.sandboxRefusal = resolved ? resolved.refusal : (opts.sandboxRefusal ?? null);
    LIVE.add(this);
  }

  /** Kills every child at once (the platform process is exiting). */
  killAll(): void {
    for (const w of this.workloads.values()) {
      w.launch?.signal('SIGKILL');
      w.child?.kill('SIGKILL');
    }
  }

  /** Stops every workload; the supervisor is done. */
  async shutdown(): Promise<void> {
    await this.removeAll();
    LIVE.delete(this);
  }

  /** Registers a workload and reserves its port; it stays `stopped` until `start`. */
  async add(spec: WorkloadSpec): Promise<WorkloadStatus> {
    if (this.workloads.has(spec.id)) throw new Error(`workload ${spec.id} exists`);
    if (spec.sandbox && !this.sandbox && this.sandboxRefusal) throw new Error(this.sandboxRefusal);
    let port = spec.port;
    if (port === undefined) {
      do port = await freePort();
      while (this.reservedPorts.has(port));
    } else if (this.reservedPorts.has(port)) throw new Error(`port ${port} is taken by another workload`);
    this.reservedPorts.add(port);
    this.workloads.set(spec.id, {
      spec,
      port,
      state: 'stopped',
      child: null,
      restarts: 0,
      consecutiveCrashes: 0,
      lastExit: null,
      startedAt: null,
      nextRestartAt: null,
      timer: null,
      log: [],
      exited: null,
      launch: null,
      generation: 0,
    });
    return this.status(spec.id)!;
  }

  has(id: string): boolean {
    return this.workloads.has(id);
  }

  /** How many of the workload's requests are under way (its sandbox's count); null when it cannot be told. */
  requestsUnderWay(id: string): Promise<number | null> {
    const w = this.workloads.get(id);
    return w && w.state === 'running' && this.isSandboxed(w) ? this.sandbox!.requestsUnderWay(id) : Promise.resolve(null);
  }

  status(id: string): WorkloadStatus | null {
    const w = this.workloads.get(id);
    if (!w) return null;
    const pid = w.child?.pid ?? null;
    return {
      id,
      state: w.state,
      port: w.port,
      socketPath: this.isSandboxed(w) ? this.sandbox!.socketPathOf(id) : null,
      uid: this.isSandboxed(w) ? this.sandbox!.uidOf(id) : null,
      pid,
      restarts: w.restarts,
      lastExit: w.lastExit,
      startedAt: w.startedAt ? new Date(w.startedAt).toISOString() : null,
      nextRestartAt: w.nextRestartAt ? new Date(w.nextRestartAt).toISOString() : null,
      rssBytes: w.launch ? w.launch.rssBytes() : pid ? rssOf(pid) : null,
    };
  }

  list(): WorkloadStatus[] {
    return [...this.workloads.keys()].map((id) => this.status(id)!);
  }

  /** The last lines the workload wrote (stdout and stderr, interleaved as they came). */
  logs(id: string): string[] {
    return [...(this.workloads.get(id)?.log ?? [])];
  }

  /** Starts the workload's process (no-op when it runs); clears a `failed` state and its crash streak. */
  start(id: string): WorkloadStatus {
    const w = this.get(id);
    if (w.state === 'running') return this.status(id)!;
    if (w.state === 'stopping') throw new Error(`workload ${id} is stopping`);
    this.clearTimer(w);
    w.consecutiveCrashes = 0;
    this.spawn(w);
    return this.status(id)!;
  }

  /** Stops the process (SIGTERM, then SIGKILL after the timeout); no automatic restart follows. */
  async stop(id: string): Promise<WorkloadStatus> {
    const w = this.get(id);
    this.clearTimer(w);
    w.generation += 1;
    if (w.exited && (w.child || w.state === 'running')) {
      this.setState(w, 'stopping');
      const exited = w.exited;
      this.signal(w, 'SIGTERM');
      const kill = setTimeout(() => this.signal(w, 'SIGKILL'), this.o.stopTimeoutMs);
      await exited;
      clearTimeout(kill);
    }
    this.setState(w, 'stopped');
    return this.status(id)!;
  }

  async restart(id: string): Promise<WorkloadStatus> {
    await this.stop(id);
    return this.start(id);
  }

  /** Stops the workload and forgets it; its port is free again. */
  async remove(id: string): Promise<void> {
    if (!this.workloads.has(id)) return;
    await this.stop(id);
    const w = this.get(id);
    this.workloads.delete(id);
    this.reservedPorts.delete(w.port);
    if (this.isSandboxed(w)) await this.sandbox!.release(id);
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.workloads.keys()].map((id) => this.stop(id)));
  }

  async removeAll(): Promise<void> {
    await Promise.all([...this.workloads.keys()].map((id) => this.remove(id)));
  }

  private get(id: string): Workload {
    const w = this.workloads.get(id);
    if (!w) throw new Error(`no workload ${id}`);
    return w;
  }

  private setState(w: Workload, state: WorkloadState): void {
    if (w.state === state) return;
    w.state = state;
    this.emit('state', this.status(w.spec.id));
  }

  private clearTimer(w: Workload): void {
    if (w.timer) clearTimeout(w.timer);
    w.timer = null;
    w.nextRestartAt = null;
  }

  private isSandboxed(w: Workload): boolean {
    return this.sandbox !== null && w.spec.sandbox !== undefined;
  }

  /** SIGTERM/SIGKILL to the workload: inside the sandbox to its own processes (a clean stop), and to the launcher. */
  private signal(w: Workload, sig: NodeJS.Signals): void {
    if (w.launch) {
      const n = w.launch.signal(sig);
      if (n > 0 && sig === 'SIGTERM') return;
    }
    w.child?.kill(sig);
  }

  private spawn(w: Workload): void {
    const { spec } = w;
    const env = typeof spec.env === 'function' ? spec.env(w.port) : (spec.env ?? {});
    const script = path.resolve(spec.cwd, spec.script);
    const argv = spec.command
      ? [spec.command, ...(spec.args ?? [])]
      : [this.o.nodePath, ...(spec.memoryMb ? [`--max-old-space-size=${spec.memoryMb}`] : []), script, ...(spec.args ?? [])];
    const childEnv: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...env,
      PORT: String(w.port),
    };
    w.startedAt = Date.now();
    const generation = ++w.generation;
    this.setState(w, 'running');
    if (!this.isSandboxed(w)) {
      // Every child loads the parent watch first (supervisor-preload.ts): it stops when this process dies.
      const [exe, ...rest] = argv;
      const args = spec.command ? rest : ['--require', parentWatchFile(), ...rest];
      w.exited = this.launch(w, exe, args, childEnv);
      return;
    }
    w.exited = (async () => {
      let launch: SandboxedLaunch;
      try {
        launch = await this.sandbox!.prepare(spec.id, spec.sandbox!, argv, spec.cwd, Boolean(spec.command));
      } catch (e) {
        this.keep(w, `sandbox: ${(e as Error).message}`);
        if (w.generation === generation) this.onExit(w, null, null, null);
        return;
      }
      if (w.generation !== generation) {
        await launch.close();
        return;
      }
      w.launch = launch;
      const before = launch.oomKills();
      await this.launch(w, launch.command, launch.args, { ...childEnv, ...launch.env, PATH: '/usr/bin:/bin' }, () =>
        launch.oomKills() > before ? 'oom' : undefined,
      );
      await launch.close();
    })();
  }

  private keep(w: Workload, chunk: string): void {
    for (const line of chunk.split('\n')) {
      if (!line) continue;
      w.log.push(line);
      if (w.log.length > this.o.logLines) w.log.shift();
    }
  }

  /** Spawns the process; resolves when it has exited (and `onExit` has run). */
  private launch(
    w: Workload,
    command: string,
    args: string[],
    env: Record<string, string>,
    exitReason?: () => 'oom' | undefined,
  ): Promise<void> {
    const child = spawn(command, args, {
      cwd: w.spec.cwd,
      env,
      // stdin is a pipe this process never writes to: the child reads its end when this process dies.
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    w.child = child;
    const keep = (chunk: Buffer) => this.keep(w, chunk.toString());
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    return new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        this.onExit(w, child, code, signal, exitReason?.());
        resolve();
      });
      child.once('error', (e) => {
        keep(Buffer.from(`spawn failed: ${e.message}`));
        // 'exit' may never come for a spawn failure.
        if (child.pid === undefined) {
          this.onExit(w, child, null, null);
          resolve();
        }
      });
    });
  }

  private onExit(
    w: Workload,
    child: ChildProcess | null,
    code: number | null,
    signal: NodeJS.Signals | null,
    reason?: 'oom',
  ): void {
    if (child !== null && w.child !== child) return;
    w.child = null;
    w.launch = null;
    w.lastExit = { code, signal, at: new Date().toISOString(), ...(reason ? { reason } : {}) };
    const ranMs = Date.now() - (w.startedAt ?? Date.now());
    if (w.state === 'stopping' || w.state === 'stopped') return;
    // Not asked to stop: a crash.
    if (ranMs >= this.o.stableAfterMs) w.consecutiveCrashes = 0;
    w.consecutiveCrashes += 1;
    if (w.consecutiveCrashes > this.o.maxConsecutiveCrashes) {
      this.setState(w, 'failed');
      return;
    }
    const delay = Math.min(this.o.maxBackoffMs, this.o.initialBackoffMs * 2 ** (w.consecutiveCrashes - 1));
    w.nextRestartAt = Date.now() + delay;
    this.setState(w, 'backoff');
    w.timer = setTimeout(() => {
      w.timer = null;
      w.nextRestartAt = null;
      if (w.state !== 'backoff' || !this.workloads.has(w.spec.id)) return;
      w.restarts += 1;
      this.spawn(w);
    }, delay);
    w.timer.unref();
  }
}
