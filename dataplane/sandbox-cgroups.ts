import { accessSync, constants, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * A workload's cgroups (docs/decisions/0273-tenant-sandbox.md): cgroup v1's `memory`, `pids` and
 * `cpu` controllers, each a group under the platform process's own group of that controller
 * (`/proc/self/cgroup`), named `<parent>/<workload>`. The launcher writes its own pid into each
 * group's `cgroup.procs` before it becomes the sandbox, so nothing of the workload ever runs outside
 * them. Memory past the limit (swap included where the kernel accounts it) wakes the kernel's OOM
 * killer inside the group only; `memory.oom_control`'s `oom_kill` counts its kills.
 */

export interface CgroupLimits {
  memoryBytes: number;
  pids: number;
  /** cgroup v1 `cpu.shares` (1024: an equal share). */
  cpuShares: number;
  /** CFS quota in cores (1: one core's time per period at most); null: none (the shares alone). */
  cpuCores: number | null;
}

type Controller = 'memory' | 'pids' | 'cpu';
const ROOT = '/sys/fs/cgroup';
const CFS_PERIOD_US = 100_000;

/** This process's group per controller (cgroup v1), or null where the controller is not mounted or not writable. */
export function cgroupControllers(): Record<Controller, string | null> {
  const out: Record<Controller, string | null> = { memory: null, pids: null, cpu: null };
  let lines: string[];
  try {
    lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
  } catch {
    return out;
  }
  for (const line of lines) {
    const [, list, rel] = line.split(':');
    if (!list || rel === undefined) continue;
    for (const name of list.split(',')) {
      if (name !== 'memory' && name !== 'pids' && name !== 'cpu') continue;
      // A combined mount (`cpu,cpuacct`) is reachable under either name on most systems.
      const mount = [path.join(ROOT, name), path.join(ROOT, list)].find((m) => existsSync(path.join(m, 'cgroup.procs')));
      if (!mount) continue;
      const own = path.join(mount, rel);
      try {
        accessSync(own, constants.W_OK);
        out[name] = own;
      } catch {
        // not ours to divide
      }
    }
  }
  return out;
}

export class WorkloadCgroup {
  private readonly dirs: Record<Controller, string>;

  constructor(parent: string, name: string) {
    const c = cgroupControllers();
    const dir = (k: Controller) => {
      const base = c[k];
      if (!base) throw new Error(`the cgroup ${k} controller is not writable here`);
      return path.join(base, parent, name);
    };
    this.dirs = { memory: dir('memory'), pids: dir('pids'), cpu: dir('cpu') };
  }

  /** The group's directory of one controller. */
  dir(controller: Controller): string {
    return this.dirs[controller];
  }

  /** Creates the groups (or reuses them) and writes the limits. */
  create(l: CgroupLimits): void {
    for (const d of Object.values(this.dirs)) mkdirSync(d, { recursive: true });
    const m = this.dirs.memory;
    // memsw must stay at least the limit: lower it after, raise it before.
    const memsw = path.join(m, 'memory.memsw.limit_in_bytes');
    const hasMemsw = existsSync(memsw);
    const current = Number(readFileSync(path.join(m, 'memory.limit_in_bytes'), 'utf8'));
    if (hasMemsw && l.memoryBytes > current) writeFileSync(memsw, String(l.memoryBytes));
    writeFileSync(path.join(m, 'memory.limit_in_bytes'), String(l.memoryBytes));
    if (hasMemsw) writeFileSync(memsw, String(l.memoryBytes));
    writeFileSync(path.join(this.dirs.pids, 'pids.max'), String(l.pids));
    writeFileSync(path.join(this.dirs.cpu, 'cpu.shares'), String(l.cpuShares));
    const quota = path.join(this.dirs.cpu, 'cpu.cfs_quota_us');
    if (existsSync(quota)) {
      writeFileSync(path.join(this.dirs.cpu, 'cpu.cfs_period_us'), String(CFS_PERIOD_US));
      writeFileSync(quota, l.cpuCores === null ? '-1' : String(Math.max(1_000, Math.round(l.cpuCores * CFS_PERIOD_US))));
    }
  }

  /** The files the launcher writes its pid into. */
  procsFiles(): string[] {
    return Object.values(this.dirs).map((d) => path.join(d, 'cgroup.procs'));
  }

  /** The group's processes running as `uid`, oldest (lowest pid) first. */
  pidsOf(uid: number): number[] {
    let pids: string[];
    try {
      pids = readFileSync(path.join(this.dirs.memory, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean);
    } catch {
      return [];
    }
    return pids
      .filter((pid) => {
        try {
          const m = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
          return m !== null && Number(m[1]) === uid;
        } catch {
          return false;
        }
      })
      .map(Number)
      .sort((a, b) => a - b);
  }

  /** Signals the group's processes running as `uid` (the workload's, not bubblewrap's); answers how many. */
  signal(uid: number, sig: NodeJS.Signals): number {
    let n = 0;
    for (const pid of this.pidsOf(uid)) {
      try {
        process.kill(pid, sig);
        n += 1;
      } catch {
        // gone
      }
    }
    return n;
  }

  /** The kernel's OOM kills in this group so far. */
  oomKills(): number {
    try {
      const m = /^oom_kill (\d+)$/m.exec(readFileSync(path.join(this.dirs.memory, 'memory.oom_control'), 'utf8'));
      return m ? Number(m[1]) : 0;
    } catch {
      return 0;
    }
  }

  /** Resident memory of the group's processes (`total_rss` of `memory.stat`), in bytes; null when unknown. */
  rssBytes(): number | null {
    try {
      const m = /^total_rss (\d+)$/m.exec(readFileSync(path.join(this.dirs.memory, 'memory.stat'), 'utf8'));
      return m ? Number(m[1]) : null;
    } catch {
      return null;
    }
  }

  /** Removes the groups (their processes are gone); a group still busy is left for the next start. */
  remove(): void {
    for (const d of Object.values(this.dirs)) {
      try {
        rmdirSync(d);
      } catch {
        // busy or gone
      }
    }
  }
}
