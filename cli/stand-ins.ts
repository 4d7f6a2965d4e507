import { readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { projectRoot } from '../core/paths';

/**
 * The addresses of the stand-ins one `platform start` runs, kept per instance so that two
 * instances in one checkout (other ports, same folder) neither overwrite nor delete each other's
 * (decision 0102). Each instance writes `<DATA_DIR>/stand-ins/<port>.json`, named by the port its
 * REST bridge listens on (else its router's, else `pid-<pid>`), and removes it when it stops only
 * if the file is still its own. A CLI command reads the file of the instance it addresses: the
 * port of `--api-url`, else of `BRIDGE_PORT`; with neither file there, the only running instance,
 * if exactly one runs.
 */
export interface StandInsRecord {
  /** The file's name without `.json`: a port, or `pid-<pid>`. */
  instance: string;
  pid: number;
  /** When that process started (`processStart`): a later process given the same id is not it. */
  pidStart?: number | null;
  bridgeUrl: string | null;
  routerUrl: string | null;
  startedAt: string;
  /** Variable name → address (as `platform start` set it). */
  standIns: Record<string, string>;
}

/** `DATA_DIR` as a folder: an absolute one as given, a relative one under the project root. */
export function dataDir(dir: string): string {
  return path.resolve(projectRoot(), dir);
}

export const standInsDir = (dataDirectory: string) => path.join(dataDir(dataDirectory), 'stand-ins');

const portOf = (url: string | null | undefined): string | null => {
  if (!url) return null;
  try {
    const u = new URL(url);
    return u.port || (u.protocol === 'https:' ? '443' : '80');
  } catch {
    return null;
  }
};

/** The name an instance's file gets. */
export function instanceName(p: { bridgeUrl?: string | null; routerUrl?: string | null; pid: number }): string {
  return portOf(p.bridgeUrl) ?? portOf(p.routerUrl) ?? `pid-${p.pid}`;
}

/** Whether a process with this id runs (signal 0 tests without sending anything). */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it runs, as another user.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * When a process started, in clock ticks since boot (field 22 of Linux's `/proc/<pid>/stat`), or
 * null where that cannot be read. A record keeps it beside the id: ids are reused — a record left by
 * a killed instance can name a process, or a thread (signal 0 answers for a thread's id too), that
 * started later and is no platform.
 */
export function processStart(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const start = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
    return Number.isFinite(start) ? start : null;
  } catch {
    return null;
  }
}

/** Whether the process a record names still runs: its id is alive and, where both are known, started when the record says. */
export function stillRuns(r: { pid: number; pidStart?: number | null }): boolean {
  if (!alive(r.pid)) return false;
  const now = r.pidStart == null ? null : processStart(r.pid);
  return now === null || now === r.pidStart;
}

async function read(file: string): Promise<StandInsRecord | null> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as StandInsRecord;
  } catch {
    return null;
  }
}

/**
 * Writes this instance's record (to a temporary name, then renamed: a reader never sees half a
 * file) and returns the function that removes it at stop — only while it is still this
 * process's, so an instance started later on the same port keeps its own.
 */
export async function recordStandIns(
  dir: string,
  p: { bridgeUrl?: string | null; routerUrl?: string | null; standIns: Record<string, string>; pid?: number },
): Promise<{ file: string; remove: () => Promise<void> }> {
  const pid = p.pid ?? process.pid;
  const instance = instanceName({ ...p, pid });
  const record: StandInsRecord = {
    instance,
    pid,
    pidStart: processStart(pid),
    bridgeUrl: p.bridgeUrl ?? null,
    routerUrl: p.routerUrl ?? null,
    startedAt: new Date().toISOString(),
    standIns: p.standIns,
  };
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `${instance}.json`);
  const tmp = path.join(dir, `.${instance}.${pid}.tmp`);
  await writeFile(tmp, `${JSON.stringify(record, null, 2)}\n`);
  await rename(tmp, file);
  const remove = async () => {
    const now = await read(file);
    if (now?.pid === pid) await rm(file, { force: true });
  };
  return { file, remove };
}

/** The running instances' records (a killed instance's file is skipped). */
export async function runningInstances(dir: string): Promise<StandInsRecord[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const records = await Promise.all(names.filter((n) => n.endsWith('.json')).map((n) => read(path.join(dir, n))));
  return records.filter((r): r is StandInsRecord => r !== null && stillRuns(r));
}

/**
 * The stand-ins of the instance a CLI call addresses: `apiUrl`'s port, else `bridgePort`'s; with
 * no running instance there, the only running one. `note` explains a miss (several instances and
 * none on that port), for the CLI to print.
 */
export async function findStandIns(
  dir: string,
  want: { apiUrl?: string | null; bridgePort: number },
): Promise<{ record: StandInsRecord | null; note: string | null }> {
  const port = portOf(want.apiUrl) ?? String(want.bridgePort);
  const exact = await read(path.join(dir, `${port}.json`));
  if (exact && stillRuns(exact)) return { record: exact, note: null };
  if (want.apiUrl) return { record: null, note: `no running platform recorded stand-ins for ${want.apiUrl}` };
  const running = await runningInstances(dir);
  if (running.length === 1) return { record: running[0], note: null };
  if (running.length === 0) return { record: null, note: null };
  const list = running.map((r) => r.bridgeUrl ?? r.routerUrl ?? `pid ${r.pid}`).join(', ');
  return {
    record: null,
    note: `${running.length} platforms are running (${list}) and none on port ${port}; pass --api-url to pick one`,
  };
}
