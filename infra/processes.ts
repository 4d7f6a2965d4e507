import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { processAlive } from '../core/process-alive';
import { InfraError, logsDir, progress, runDir, shown, sleep, tail } from './tools';

/**
 * Detached engine processes: started in their own session so they outlive `infra up`, with a pid
 * file under <DATA_DIR>/run/ and output appended to a log under <DATA_DIR>/logs/. Stopping only ever
 * signals a pid that a pid file names *and* whose command line still carries the engine's marker,
 * so a recycled pid is never hit.
 */
export interface EngineProcess {
  /** File stem for the pid file and log: `kafka`, `mongo-wire`. */
  name: string;
  /** Human name for messages: `Kafka`, `the MongoDB-wire server`. */
  label: string;
  /** A string the engine's command line contains (its main class). */
  marker: string;
}

export const pidFile = (e: EngineProcess) => runDir(`${e.name}.pid`);
export const infoFile = (e: EngineProcess) => runDir(`${e.name}.json`);
export const logFile = (e: EngineProcess) => logsDir(`${e.name}.log`);

function commandLine(pid: number): string | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return undefined;
  }
}

/** Whether `pid` is alive and (where /proc can tell) still runs the engine. */
function isOurs(e: EngineProcess, pid: number): boolean {
  if (!processAlive(pid)) return false;
  const cmd = commandLine(pid);
  if (cmd === undefined) return !fs.existsSync('/proc/self'); // no /proc: trust the pid file
  return cmd.includes(e.marker);
}

/** The pid that the engine's pid file names, when that process is alive and is the engine. */
export function runningPid(e: EngineProcess): number | undefined {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(pidFile(e), 'utf8').trim());
  } catch {
    return undefined;
  }
  return Number.isInteger(pid) && pid > 0 && isOurs(e, pid) ? pid : undefined;
}

/** What `infra up` recorded about the running engine (backend, port…), if anything. */
export function readInfo(e: EngineProcess): Record<string, unknown> | undefined {
  try {
    return JSON.parse(fs.readFileSync(infoFile(e), 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

export interface Started {
  pid: number;
  /** Set once the process has exited (code or signal), while `infra up` still watches it. */
  exited: () => string | undefined;
}

/** Starts `cmd args` detached, output appended to the engine's log; writes the pid and info files. */
export function startDetached(
  e: EngineProcess,
  cmd: string,
  args: string[],
  info: Record<string, unknown>,
  cwd: string,
): Started {
  fs.mkdirSync(runDir(), { recursive: true });
  fs.mkdirSync(path.dirname(logFile(e)), { recursive: true });
  const fd = fs.openSync(logFile(e), 'a');
  fs.writeSync(fd, `\n===== ${new Date().toISOString()} infra: starting ${e.label}: ${cmd} ${args.join(' ')}\n`);
  let exitedWith: string | undefined;
  try {
    const child = spawn(cmd, args, { cwd, detached: true, stdio: ['ignore', fd, fd] });
    child.once('error', (err) => (exitedWith = `could not be started (${err.message})`));
    child.once('exit', (code, signal) => (exitedWith = signal ? `was killed by ${signal}` : `exited with code ${code}`));
    child.unref();
    if (child.pid === undefined) throw new InfraError(`infra: could not start ${e.label} (${cmd}); see ${shown(logFile(e))}`);
    fs.writeFileSync(pidFile(e), `${child.pid}\n`);
    fs.writeFileSync(
      infoFile(e),
      `${JSON.stringify({ pid: child.pid, startedAt: new Date().toISOString(), ...info }, null, 2)}\n`,
    );
    return { pid: child.pid, exited: () => exitedWith };
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * The telling lines of the engine's log since its last start: the first ERROR/FATAL line and the
 * root causes of exceptions; else its last lines.
 */
function startupErrors(e: EngineProcess): string {
  const text = tail(logFile(e), 400);
  const lines = text.slice(text.lastIndexOf('===== ')).split('\n');
  const firstError = lines.find((l) => /\b(ERROR|FATAL)\b|^Exception in thread/.test(l));
  const causes = lines.filter((l) => /^Caused by: /.test(l));
  const picked = [...new Set([firstError, ...causes.slice(-2)].filter((l): l is string => Boolean(l)))];
  const chosen = picked.length > 0 ? picked : lines.slice(-8);
  return chosen.map((l) => (l.length > 300 ? `${l.slice(0, 300)}…` : l)).join('\n');
}

/**
 * Polls `ready` every 300 ms until it is true; fails with a message pointing at the log when the
 * process exits first or the timeout passes.
 */
export async function waitUntilReady(
  e: EngineProcess,
  ready: () => Promise<boolean>,
  opts: { timeoutMs: number; exited?: () => string | undefined; where: string },
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  for (;;) {
    if (await ready()) return;
    const why = opts.exited?.();
    if (why) {
      const cause = startupErrors(e);
      throw new InfraError(
        `infra: ${e.label} ${why} while starting on ${opts.where}; see ${shown(logFile(e))}${cause ? `:\n${cause}` : ''}`,
      );
    }
    if (Date.now() > deadline) {
      throw new InfraError(
        `infra: ${e.label} did not become ready on ${opts.where} within ${Math.round(opts.timeoutMs / 1000)}s; see ${shown(logFile(e))}`,
      );
    }
    await sleep(300);
  }
}

/**
 * Stops the engine its pid file names: SIGTERM, wait for exit, SIGKILL after `graceMs`. Returns
 * what happened: 'stopped', 'killed' or 'not-running'. Pid and info files are removed.
 */
export async function stopEngine(e: EngineProcess, graceMs = 15000): Promise<'stopped' | 'killed' | 'not-running'> {
  const pid = runningPid(e);
  let result: 'stopped' | 'killed' | 'not-running' = 'not-running';
  if (pid !== undefined) {
    result = 'stopped';
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      /* already gone */
    }
    const deadline = Date.now() + graceMs;
    while (processAlive(pid) && Date.now() < deadline) await sleep(200);
    if (processAlive(pid)) {
      result = 'killed';
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
      const killDeadline = Date.now() + 5000;
      while (processAlive(pid) && Date.now() < killDeadline) await sleep(100);
    }
  }
  fs.rmSync(pidFile(e), { force: true });
  fs.rmSync(infoFile(e), { force: true });
  return result;
}

/**
 * Runs `fn` holding an exclusive lock file (created with O_EXCL, holding our pid). A lock whose
 * holder is gone is taken over; a live holder is waited for (up to `waitMs`), so two `infra up`s
 * at once don't both start an engine.
 */
export async function withLockFile<T>(file: string, what: string, waitMs: number, fn: () => Promise<T>): Promise<T> {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const deadline = Date.now() + waitMs;
  let announced = false;
  for (;;) {
    try {
      fs.writeFileSync(file, `${process.pid}\n`, { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(fs.readFileSync(file, 'utf8').trim() || '0');
      if (!holder || holder === process.pid || !processAlive(holder)) {
        fs.rmSync(file, { force: true });
        continue;
      }
      if (!announced) {
        announced = true;
        progress(`waiting for ${what} (pid ${holder}) to finish…`);
      }
      if (Date.now() > deadline) {
        throw new InfraError(`infra: ${what} (pid ${holder}) still holds ${shown(file)} after ${Math.round(waitMs / 1000)}s`);
      }
      await sleep(250);
    }
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(file, { force: true });
  }
}
