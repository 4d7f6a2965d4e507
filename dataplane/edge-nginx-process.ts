import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * The nginx engine's process (docs/decisions/0310-nginx-edge-engine.md): one master in the
 * foreground as a child of the platform process, in a folder of its own (`-p PREFIX`), started with
 * `setpriv --pdeathsig KILL` where util-linux has it so it dies with the platform even when that is
 * killed; its workers (which outlive a killed master) are killed on the platform's exit and, at the
 * next start, from the pid file. It runs in its folder (its working directory: the route links'
 * socket addresses are relative to it, to stay short). Configurations are written atomically (temp file, rename) and
 * applied with SIGHUP; reloads are coalesced: at most one in flight, the newest text wins.
 */

/** The processes whose parent is `pid` (nginx's workers). */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function killQuietly(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(pid, signal);
  } catch {
    /* gone */
  }
}

/** The last lines of a file ('' when it cannot be read). */
function tailOf(file: string, lines = 5): string {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

const sizeOf = (file: string) => {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
};

/** What a file holds from `offset` on ('' when it cannot be read). */
function readFrom(file: string, offset: number): string {
  try {
    return fs.readFileSync(file).subarray(offset).toString('utf8');
  } catch {
    return '';
  }
}

/** `setpriv` from util-linux, when this machine has it. */
function setprivPath(): string | null {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(':')) {
    const p = path.join(dir, 'setpriv');
    if (dir && fs.existsSync(p)) return p;
  }
  return null;
}

/** Writes `text` to `file` through a temp file and a rename, so a reader sees the old file or the new one. */
export function writeAtomically(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

/** The folders a process holds files open in (nginx holds its logs in its prefix). */
function openFolders(pid: number): string[] {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).map((fd) => {
      try {
        return path.dirname(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      } catch {
        return '';
      }
    });
  } catch {
    return [];
  }
}

const alive = (pid: number) => fs.existsSync(`/proc/${pid}`);

/**
 * nginx processes left by an earlier platform process that was killed (a killed master's workers
 * live on, still listening): those of `binary` with a log open in `prefix`, or in a sibling folder
 * `run-<pid>-<n>` of a process that is gone (that folder is removed too).
 */
function killStale(prefix: string, binary: string): void {
  const root = path.dirname(prefix);
  const ours = path.basename(root) === 'edge-nginx';
  const stale = (dir: string) => {
    if (dir === prefix) return true;
    // Only in the engine's own folder (`…/edge-nginx/`), never beside a prefix elsewhere (e.g. the temp folder).
    const m = /^run-(\d+)-\d+$/.exec(path.basename(dir));
    return ours && path.dirname(dir) === root && m !== null && !alive(Number(m[1]));
  };
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const pid = Number(d);
    try {
      if (path.resolve(fs.readlinkSync(`/proc/${pid}/exe`)) !== path.resolve(binary)) continue;
    } catch {
      continue;
    }
    if (openFolders(pid).some(stale)) killQuietly(pid);
  }
  // The folders of runs whose process is gone.
  for (const name of fs.existsSync(root) ? fs.readdirSync(root) : []) {
    const dir = path.join(root, name);
    if (dir !== prefix && stale(dir)) fs.rmSync(dir, { recursive: true, force: true });
  }
}

export class NginxEdgeProcess {
  private exit: string | undefined;
  private readonly child: ChildProcess;
  private applying: Promise<void> | null = null;
  private pending: string | null = null;
  private failure: Error | null = null;
  /** The text last asked for (at start or by `apply`). */
  private wanted = '';
  /** How many reloads were sent (a table change that renders the same text sends none). */
  reloads = 0;
  private readonly onExit = () => this.kill();

  private constructor(
    readonly binary: string,
    readonly prefix: string,
  ) {
    const setpriv = setprivPath();
    const args = ['-p', `${prefix}/`, '-c', 'nginx.conf', '-e', 'error.log', '-g', 'daemon off; master_process on;'];
    // In a process group of its own (`detached`), which the reaper below kills whole.
    const opts = { stdio: 'ignore', cwd: prefix, detached: true } as const;
    this.child = setpriv ? spawn(setpriv, ['--pdeathsig', 'KILL', binary, ...args], opts) : spawn(binary, args, opts);
    // A killed master leaves its workers serving (they do not watch it). The reaper reads a pipe
    // from this process: when this process ends, even by SIGKILL, the pipe closes and the reaper
    // kills nginx's group, workers included.
    this.reaper = spawn('/bin/sh', ['-c', `read _; kill -9 -${this.child.pid} 2>/dev/null`], {
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    this.reaper.on('error', () => undefined);
    this.reaper.stdin?.on('error', () => undefined);
    this.reaper.unref();
    (this.reaper.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    this.child.once('exit', (code, signal) => {
      this.exit = signal ?? `code ${code}`;
      // Its group is gone: the reaper must not kill a group that reuses the number.
      this.reaper.kill('SIGKILL');
    });
    process.once('exit', this.onExit);
  }

  private readonly reaper: ChildProcess;

  get confFile(): string {
    return path.join(this.prefix, 'nginx.conf');
  }
  get errorLog(): string {
    return path.join(this.prefix, 'error.log');
  }
  /** The master's pid (setpriv execs nginx in place). */
  get pid(): number {
    return this.child.pid!;
  }
  /** Why the master exited, if it did. */
  get exited(): string | undefined {
    return this.exit;
  }

  /**
   * Writes `conf` into `prefix` (created) and starts nginx on it; resolves once `ready()` says the
   * listener answers, and throws with the end of nginx's error log if it exits or does not answer.
   */
  static async start(binary: string, prefix: string, conf: string, ready: () => Promise<boolean>): Promise<NginxEdgeProcess> {
    for (const d of ['tmp', 'logs']) fs.mkdirSync(path.join(prefix, d), { recursive: true });
    killStale(prefix, binary);
    writeAtomically(path.join(prefix, 'nginx.conf'), conf);
    const p = new NginxEdgeProcess(binary, prefix);
    p.wanted = conf;
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && p.exit === undefined) {
      if (await ready()) return p;
      await sleep(25);
    }
    const why = tailOf(p.errorLog) || (p.exit ? `exited (${p.exit})` : 'no answer in 15 s');
    p.kill();
    throw new Error(`nginx did not start in ${prefix}: ${why}`);
  }

  /** The workers now running (after a reload, old ones may still be draining). */
  workers(): number[] {
    return childPids(this.pid);
  }

  /**
   * Applies `conf` (nothing when it is the text already asked for): at most one reload runs at a time; a call during one replaces what the next
   * applies (a burst of changes costs one or two reloads). Resolves once `conf` (or a newer text) is live.
   */
  apply(conf: string): Promise<void> {
    // The same text again (a reconcile pass routing what is already routed): no reload, which would
    // close the idle kept-alive client connections for nothing.
    if (conf === this.wanted && !this.failure) return this.applying ?? Promise.resolve();
    this.wanted = conf;
    this.pending = conf;
    if (!this.applying) {
      this.applying = (async () => {
        try {
          while (this.pending !== null) {
            const next = this.pending;
            this.pending = null;
            this.failure = null;
            await this.reload(next).catch((err: Error) => {
              this.failure = err;
              throw err;
            });
          }
        } finally {
          this.applying = null;
        }
      })();
    }
    return this.applying;
  }

  /** Resolves when no reload is in flight; rejects when the last one failed (nginx serves an older table). */
  async settled(): Promise<void> {
    while (this.applying) await this.applying.catch(() => undefined);
    if (this.failure) throw this.failure;
  }

  /**
   * SIGHUP with the new file in place: the master checks it, starts new workers that take new
   * connections and lets the old ones finish. Resolves once a new worker runs and every old one has
   * exited or stopped accepting (its title says "shutting down"); a config nginx refuses throws
   * with its error log's end (the old workers keep serving).
   */
  private async reload(conf: string): Promise<void> {
    if (this.exit !== undefined) throw new Error(`nginx exited (${this.exit})`);
    const before = new Set(this.workers());
    const logFrom = sizeOf(this.errorLog);
    writeAtomically(this.confFile, conf);
    this.reloads += 1;
    this.child.kill('SIGHUP');
    const draining = (pid: number) => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('shutting down');
      } catch {
        return true; // gone
      }
    };
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && this.exit === undefined) {
      const now = this.workers();
      if (now.some((p) => !before.has(p)) && now.every((p) => !before.has(p) || draining(p))) return;
      // A configuration nginx refuses: it says so in its error log and keeps the old one.
      const said = readFrom(this.errorLog, logFrom);
      if (said.includes('[emerg]')) throw new Error(`nginx refused the configuration: ${said.trim()}`);
      await sleep(5);
    }
    throw new Error(`nginx did not reload: ${tailOf(this.errorLog)}`);
  }

  /** SIGKILL to the workers and the master. */
  private kill(): void {
    for (const w of this.workers()) killQuietly(w);
    this.child.kill('SIGKILL');
    this.reaper.kill('SIGKILL');
  }

  /** Graceful stop (SIGQUIT: requests in flight finish), SIGKILL after `graceMs`. */
  async stop(graceMs = 2_000): Promise<void> {
    process.off('exit', this.onExit);
    if (this.exit !== undefined) {
      this.kill();
      return;
    }
    const workers = this.workers();
    const done = new Promise<void>((r) => this.child.once('exit', () => r()));
    this.child.kill('SIGQUIT');
    const timer = setTimeout(() => this.kill(), graceMs);
    await done;
    clearTimeout(timer);
    for (const w of workers) killQuietly(w);
  }
}
