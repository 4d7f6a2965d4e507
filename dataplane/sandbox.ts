import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readlinkSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { chmod, chown, mkdir, rm } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { dataRoot } from '../core/paths';
import { processAlive } from '../core/process-alive';
import { cgroupControllers, type CgroupLimits, WorkloadCgroup } from './sandbox-cgroups';
import { sandboxPreloadFile } from './sandbox-preload';

/**
 * The sandbox every hosted workload runs in (docs/decisions/0273-tenant-sandbox.md; docs/contracts.md,
 * "Tenant isolation"): bubblewrap builds the namespaces and the file-system view, `setpriv` drops to
 * the workload's own uid, and cgroups bound memory, pids and CPU.
 *
 * - **Who:** a uid of its own (stable per workload id, from `SANDBOX_UID_BASE`), never root, never
 *   the platform's; no capabilities, `no_new_privs`.
 * - **What it sees:** `/usr` (and the merged `/bin`, `/lib`, …) and a few files of `/etc` read-only,
 *   its own mounts (its directory read-write, its runtime read-only) at their host paths, whose
 *   parent directories exist only as untraversable-for-listing skeletons (mode 0711), a private
 *   `/tmp`, its own `/proc` (pid namespace) and a minimal `/dev`.
 * - **Network:** its own network namespace with only its own loopback. The edge reaches it on a unix
 *   socket in its run directory (`http.sock`): the preload makes the server that listens on `PORT`
 *   listen there instead. Egress is only what the spec declares, each a unix socket the platform
 *   answers and pipes to one host:port.
 * - **Limits:** a memory cgroup (the kernel's OOM killer ends the workload past it), `pids.max`, CPU
 *   shares and a CFS quota.
 * - **Lifetime:** `--die-with-parent`, and the parent watch of the preload (SIGTERM on the
 *   platform's death, as before).
 */

export interface SandboxMount {
  /** A host path; it is seen at the same path inside. */
  path: string;
  write?: boolean;
}

export interface SandboxEgress {
  /** What the workload connects to (as it is configured: the host name or address and port it uses). */
  host: string;
  port: number;
}

export interface SandboxSpec {
  mounts: SandboxMount[];
  /** Memory limit of the whole workload, in MiB (cgroup). */
  memoryMb: number;
  /** Processes and threads at most (default 512). */
  pids?: number;
  /** CPU weight relative to other workloads (cgroup v1 shares, default 1024). */
  cpuShares?: number;
  /** CPU time at most, in cores (default `SANDBOX_CPU_CORES`, else no cap beyond the shares). */
  cpuCores?: number;
  /** The only outside addresses the workload may reach. */
  egress?: SandboxEgress[];
  /** Extra executables or files the workload needs that live outside `/usr` (seen read-only at their path). */
  extraReadOnly?: string[];
}

export interface SandboxOptions {
  /** The bubblewrap executable. */
  bwrap: string;
  /** Where per-workload run directories live (short: unix socket paths are at most 107 bytes). */
  stateDir: string;
  /** First uid of the workloads' range. */
  uidBase?: number;
}

/** What the supervisor runs for one sandboxed workload. */
export interface SandboxedLaunch {
  command: string;
  args: string[];
  /** What the launch adds to the workload's environment (the preload's configuration file). */
  env: Record<string, string>;
  /** Sends a signal to the workload's own processes (not to bubblewrap), found through its cgroup. */
  signal(sig: NodeJS.Signals): number;
  /** Resident memory of the whole workload (its cgroup), in bytes. */
  rssBytes(): number | null;
  /** How many times the kernel's OOM killer has ended a process of this workload so far. */
  oomKills(): number;
  /** Ends what the launch holds on the host (egress listeners); the cgroup stays until `release`. */
  close(): Promise<void>;
}

/** The uid range workloads get uids from: 2^24 ids above the base, so two ids rarely meet. */
const UID_SPAN = 1 << 24;

export const DEFAULT_SANDBOX_PIDS = 512;

/** Read-only files of `/etc` a runtime needs (TLS roots, name resolution, time zone); each only if present. */
const ETC_FILES = ['/etc/ssl', '/etc/ca-certificates', '/etc/resolv.conf', '/etc/hosts', '/etc/nsswitch.conf', '/etc/localtime'];

const SH_JOIN_CGROUPS = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 97; shift; n=$((n-1)); done; exec "$@"';

export class Sandbox {
  private readonly uids = new Map<string, number>();
  private readonly taken = new Set<number>();
  private readonly cgroups = new Map<string, WorkloadCgroup>();
  private readonly uidBase: number;

  /** This platform process's share: its workloads' run directories and cgroups live under `<pid>`. */
  private readonly instance = String(process.pid);

  constructor(readonly o: SandboxOptions) {
    this.uidBase = o.uidBase ?? 1_000_000;
    sweepDeadInstances(o.stateDir);
  }

  /** The workload's uid: stable for its id (a hash), unique among this sandbox's workloads. */
  uidOf(id: string): number {
    const known = this.uids.get(id);
    if (known !== undefined) return known;
    let n = createHash('sha256').update(id).digest().readUInt32BE(0) % UID_SPAN;
    while (this.taken.has(this.uidBase + n)) n = (n + 1) % UID_SPAN;
    const uid = this.uidBase + n;
    this.uids.set(id, uid);
    this.taken.add(uid);
    return uid;
  }

  /** The workload's run directory on the host (its ingress and egress sockets). */
  runDir(id: string): string {
    return path.join(this.o.stateDir, this.instance, createHash('sha256').update(id).digest('hex').slice(0, 12));
  }

  /** The preload's configuration file of the workload (in its run directory). */
  private configPathOf(id: string): string {
    return path.join(this.runDir(id), 'sandbox.json');
  }

  /** The unix socket the workload serves on (in its run directory). */
  socketPathOf(id: string): string {
    return path.join(this.runDir(id), 'http.sock');
  }

  /** The unix socket that answers how many of the workload's requests are under way (its preload's). */
  busyPathOf(id: string): string {
    return path.join(this.runDir(id), 'busy.sock');
  }

  /**
   * How many requests the workload's server has not answered yet, as its preload counts them; null
   * when it cannot say (not running, not a Node workload, no answer within `timeoutMs`).
   */
  requestsUnderWay(id: string, timeoutMs = 1_000): Promise<number | null> {
    return new Promise((resolve) => {
      let got = '';
      const c = net.connect({ path: this.busyPathOf(id) });
      const done = (n: number | null) => {
        c.destroy();
        resolve(n);
      };
      c.setTimeout(timeoutMs, () => done(null));
      c.on('data', (d) => (got += d.toString()));
      c.on('end', () => done(/^\d+$/.test(got) ? Number(got) : null));
      c.on('error', () => done(null));
    });
  }

  /** The workload's memory cgroup directory (its `cgroup.procs` lists every process of it). */
  memoryGroup(id: string): string {
    return (this.cgroups.get(id) ?? this.newGroup(id)).dir('memory');
  }

  /** The workload's cgroups (under this process's share), not yet created. */
  private newGroup(id: string): WorkloadCgroup {
    return new WorkloadCgroup(`${CGROUP_PARENT}-${this.instance}`, path.basename(this.runDir(id)));
  }

  /**
   * Prepares a launch: the run directory (the workload's own, mode 0700), its writable mounts
   * handed to its uid, its cgroup with the limits, the egress listeners; answers the command line.
   */
  async prepare(id: string, spec: SandboxSpec, argv: string[], cwd: string, raw = false): Promise<SandboxedLaunch> {
    const uid = this.uidOf(id);
    const run = this.runDir(id);
    await rm(run, { recursive: true, force: true });
    await mkdir(path.dirname(run), { recursive: true, mode: 0o711 });
    await mkdir(run, { recursive: true, mode: 0o700 });
    await chown(run, uid, uid);
    for (const m of spec.mounts) {
      if (!m.write) continue;
      await chownTree(m.path, uid);
      // Its own and nobody else's on the host either (other uids cannot enter it).
      await chmod(m.path, 0o700);
    }
    // Each declared egress: its unix socket in the run directory, answered here.
    const declared = (spec.egress ?? []).map((e, i) => ({
      host: e.host,
      port: e.port,
      path: path.join(run, `egress-${i}.sock`),
    }));
    const egress = await Promise.all(declared.map((e) => egressListener(e.path, e, uid)));
    const limits: CgroupLimits = {
      memoryBytes: spec.memoryMb * 1024 * 1024,
      pids: spec.pids ?? DEFAULT_SANDBOX_PIDS,
      cpuShares: spec.cpuShares ?? 1024,
      cpuCores: spec.cpuCores ?? (process.env.SANDBOX_CPU_CORES ? Number(process.env.SANDBOX_CPU_CORES) : null),
    };
    let cg = this.cgroups.get(id);
    if (!cg) {
      cg = this.newGroup(id);
      this.cgroups.set(id, cg);
    }
    cg.create(limits);
    const socketPath = this.socketPathOf(id);
    const preload = sandboxPreloadFile();
    const config = this.configPathOf(id);
    writeFileSync(config, JSON.stringify({ egress: declared, listen: socketPath, busy: this.busyPathOf(id) }), { mode: 0o644 });
    const bw = bwrapArgs({ ...spec, run, preload, cwd, exe: argv[0] });
    const priv = dropTo(uid);
    const [exe, ...rest] = argv;
    const inner = raw ? argv : [exe, '--require', preload, ...rest];
    const procs = cg.procsFiles();
    return {
      command: '/bin/sh',
      args: [
        '-c',
        SH_JOIN_CGROUPS,
        'sandbox',
        String(procs.length),
        ...procs,
        this.o.bwrap,
        ...bw,
        '--',
        '/usr/bin/setpriv',
        ...priv,
        '--',
        ...inner,
      ],
      env: {
        PLATFORM_SANDBOX_CONFIG: config,
        PLATFORM_LISTEN_SOCKET: socketPath,
        HOME: '/tmp',
        TMPDIR: '/tmp',
      },
      signal: (sig) => cg.signal(uid, sig),
      rssBytes: () => cg.rssBytes(),
      oomKills: () => cg.oomKills(),
      close: async () => {
        await Promise.all(egress.map((s) => new Promise<void>((r) => s.close(() => r()))));
      },
    };
  }

  /**
   * A command line that runs `argv` inside a running workload's sandbox, as its uid, with nothing
   * more than the workload has (its namespaces, its view, no capabilities): for an operator's look
   * inside, and for the tests that attack a sandbox from within. Null when the workload is not running.
   */
  enterCommand(id: string, argv: string[]): { command: string; args: string[] } | null {
    const cg = this.cgroups.get(id);
    const uid = this.uids.get(id);
    if (!cg || uid === undefined) return null;
    const [pid] = cg.pidsOf(uid);
    if (pid === undefined) return null;
    const ns = ['--mount', '--net', '--pid', '--ipc', '--uts', '--root', '--wd'];
    const priv = dropTo(uid);
    return { command: 'nsenter', args: [`--target=${pid}`, ...ns, '--', '/usr/bin/setpriv', ...priv, '--', ...argv] };
  }

  /** The preload and its configuration for a process started inside the workload (`enterCommand`). */
  preloadOf(id: string): { preload: string; config: string } {
    return { preload: sandboxPreloadFile(), config: this.configPathOf(id) };
  }

  /** Removes the workload's cgroup and run directory (it has stopped). */
  async release(id: string): Promise<void> {
    this.cgroups.get(id)?.remove();
    this.cgroups.delete(id);
    await rm(this.runDir(id), { recursive: true, force: true });
    const uid = this.uids.get(id);
    if (uid !== undefined) this.taken.delete(uid);
    this.uids.delete(id);
  }
}

/** The cgroup every workload's group is under: `platform-sandbox-<platform pid>` in each controller. */
export const CGROUP_PARENT = 'platform-sandbox';

/**
 * Removes what platform processes that are gone left behind: their run directories and their (empty)
 * cgroups. Their workloads died with them (`--die-with-parent`).
 */
function sweepDeadInstances(stateDir: string): void {
  const dead = (name: string) => /^\d+$/.test(name) && Number(name) !== process.pid && !processAlive(Number(name));
  try {
    for (const d of readdirSync(stateDir)) if (dead(d)) rmSync(path.join(stateDir, d), { recursive: true, force: true });
  } catch {
    // no state directory yet
  }
  for (const base of Object.values(cgroupControllers())) {
    if (!base) continue;
    let names: string[];
    try {
      names = readdirSync(base).filter((n) => n.startsWith(`${CGROUP_PARENT}-`) && dead(n.slice(CGROUP_PARENT.length + 1)));
    } catch {
      continue;
    }
    for (const n of names) {
      const parent = path.join(base, n);
      try {
        for (const child of readdirSync(parent, { withFileTypes: true }))
          if (child.isDirectory()) rmdirSync(path.join(parent, child.name));
        rmdirSync(parent);
      } catch {
        // still busy: left for a later sweep
      }
    }
  }
}

/** `setpriv`'s arguments that make the process `uid` with no groups, no capabilities and `no_new_privs`. */
function dropTo(uid: number): string[] {
  return [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs'];
}

/** Every ancestor of `p` (without `/`), shallowest first. */
function ancestors(p: string): string[] {
  const out: string[] = [];
  for (let d = path.dirname(p); d !== '/' && d !== '.'; d = path.dirname(d)) out.unshift(d);
  return out;
}

function bwrapArgs(o: SandboxSpec & { run: string; preload: string; cwd: string; exe: string }): string[] {
  const a = [
    '--unshare-ipc',
    '--unshare-pid',
    '--unshare-net',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--hostname',
    'sandbox',
    '--die-with-parent',
    '--ro-bind',
    '/usr',
    '/usr',
  ];
  for (const l of ['bin', 'lib', 'lib64', 'sbin']) {
    const target = path.join('/', l);
    if (!existsSync(target)) continue;
    // Debian's merged /usr: these are links into /usr; otherwise the directories themselves.
    const merged = existsSync(`/usr/${l}`) && readlinkOrNull(target) === `usr/${l}`;
    a.push(...(merged ? ['--symlink', `usr/${l}`, target] : ['--ro-bind', target, target]));
  }
  a.push('--proc', '/proc', '--dev', '/dev', '--perms', '1777', '--tmpfs', '/tmp');
  const etc = ETC_FILES.filter((f) => existsSync(f));
  // The executable itself, when it is not under /usr (a Node from a version manager, workerd from node_modules).
  const extra = [...(o.extraReadOnly ?? []), ...(o.exe.startsWith('/usr/') ? [] : [o.exe])];
  const own = [...o.mounts.map((m) => m.path), o.run, o.preload, ...extra];
  // bubblewrap makes missing parents of a mount 0700 (root's): make them first. The system's (/etc)
  // listable; those of the workload's own paths traversable but not listable (0711).
  const skeleton = new Map<string, string>();
  for (const p of own) for (const d of ancestors(p)) if (!d.startsWith('/usr') && d !== '/tmp') skeleton.set(d, '0711');
  for (const f of etc) for (const d of ancestors(f)) skeleton.set(d, '0755');
  for (const [d, mode] of [...skeleton].sort(([x], [y]) => x.split('/').length - y.split('/').length))
    a.push('--perms', mode, '--dir', d);
  for (const f of etc) a.push('--ro-bind', f, f);
  for (const m of o.mounts) a.push(m.write ? '--bind' : '--ro-bind', m.path, m.path);
  for (const p of extra) a.push('--ro-bind', p, p);
  a.push('--bind', o.run, o.run, '--ro-bind', o.preload, o.preload);
  a.push('--chdir', o.cwd);
  return a;
}

function readlinkOrNull(p: string): string | null {
  try {
    return readlinkSync(p);
  } catch {
    return null;
  }
}

/** Hands a writable tree to the workload's uid (files the platform wrote there, a restore's, included). */
async function chownTree(p: string, uid: number): Promise<void> {
  await mkdir(p, { recursive: true });
  await new Promise<void>((resolve, reject) => {
    const c = spawn('chown', ['-R', '-h', `${uid}:${uid}`, p], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    c.stderr.on('data', (d: Buffer) => (err += d.toString()));
    c.on('error', reject);
    c.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`chown ${p}: ${err.trim()}`))));
  });
}

/** One declared egress: a unix socket the workload may connect to, piped to one host:port. */
async function egressListener(socketPath: string, target: SandboxEgress, uid: number): Promise<net.Server> {
  const server = net.createServer((inside) => {
    const out = net.connect({ host: target.host, port: target.port });
    inside.pipe(out).pipe(inside);
    const end = () => {
      inside.destroy();
      out.destroy();
    };
    inside.on('error', end);
    out.on('error', end);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  server.unref();
  await chown(socketPath, uid, uid);
  await chmod(socketPath, 0o600);
  return server;
}

export type SandboxMode = 'on' | 'off';

/** What the data plane found: a sandbox to use, or why there is none. */
export interface SandboxResolution {
  sandbox: Sandbox | null;
  /** Empty when the sandbox is on; else what is missing, one sentence each. */
  missing: string[];
  /**
   * Set when a tenant workload must not start without the sandbox (production, or
   * `PLATFORM_SANDBOX=on`) and there is none: the error to refuse it with, naming what is missing.
   */
  refusal: string | null;
}

let warned = false;

/**
 * Decides whether workloads run sandboxed (`PLATFORM_SANDBOX`: `on` requires it, `off` turns it
 * off — development only; unset: on when it can be set up). In production (`NODE_ENV=production`)
 * a tenant workload without the sandbox is refused with an error naming what is missing; in
 * development a missing piece is a warning, once, naming the setting.
 */
export function resolveSandbox(env: NodeJS.ProcessEnv = process.env): SandboxResolution {
  const mode = env.PLATFORM_SANDBOX;
  const production = env.NODE_ENV === 'production';
  const missing = mode === 'off' ? ['the sandbox is turned off (PLATFORM_SANDBOX=off)'] : sandboxMissing(env);
  if (missing.length === 0) {
    const sandbox = new Sandbox({
      bwrap: bwrapPath(env),
      stateDir: env.SANDBOX_STATE_DIR ?? path.join(dataRoot(env), 'sandbox'),
      uidBase: env.SANDBOX_UID_BASE ? Number(env.SANDBOX_UID_BASE) : undefined,
    });
    return { sandbox, missing, refusal: null };
  }
  const message = `the tenant sandbox cannot be set up: ${missing.join('; ')}`;
  if (production || mode === 'on')
    return { sandbox: null, missing, refusal: `refusing to start a tenant workload: ${message} (docs/sandbox.md)` };
  if (!warned && mode !== 'off') {
    warned = true;
    process.emitWarning(
      `${message}; hosted workloads run WITHOUT isolation (set PLATFORM_SANDBOX=on to require it; docs/sandbox.md)`,
    );
  }
  return { sandbox: null, missing, refusal: null };
}

/** `PLATFORM_BWRAP`, else the copy `platform infra up` installs (<DATA_DIR>/bubblewrap), else `bwrap` on PATH. */
export function bwrapPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PLATFORM_BWRAP) return env.PLATFORM_BWRAP;
  const installed = path.join(dataRoot(env), 'bubblewrap', 'base', 'usr', 'bin', 'bwrap');
  if (existsSync(installed)) return installed;
  for (const d of (env.PATH ?? '').split(':')) if (d && existsSync(path.join(d, 'bwrap'))) return path.join(d, 'bwrap');
  return installed;
}

/** What the sandbox lacks on this machine, one sentence each (empty: it can be set up). */
export function sandboxMissing(env: NodeJS.ProcessEnv = process.env): string[] {
  const missing: string[] = [];
  if (process.platform !== 'linux') return ['Linux namespaces (this is not Linux)'];
  if (typeof process.getuid === 'function' && process.getuid() !== 0)
    missing.push(
      'root: the platform starts workloads as other uids (run it as root, or in a container with CAP_SETUID and CAP_SYS_ADMIN)',
    );
  if (!existsSync(bwrapPath(env)))
    missing.push('bubblewrap (`platform infra up` installs it; or apt-get install bubblewrap; or PLATFORM_BWRAP)');
  if (!existsSync('/usr/bin/setpriv')) missing.push('setpriv (Debian: apt-get install util-linux)');
  const c = cgroupControllers();
  for (const name of ['memory', 'pids', 'cpu'] as const) if (!c[name]) missing.push(`a writable cgroup ${name} controller`);
  return missing;
}
