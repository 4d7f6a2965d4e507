import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { dataRoot } from '../core/paths';

/**
 * The parent watch every supervised Node process loads first (`node --require <file>`; decision
 * 0245): a workload never outlives the platform that supervises it, even when the platform is
 * killed with SIGKILL and its own exit handler never runs.
 *
 * The supervisor gives each child a stdin pipe it never writes to. The kernel closes the platform's
 * end when the platform dies, however it dies, so the child reads end-of-file at once. As a
 * fallback, the child also checks every half second whether its parent changed (it is re-parented
 * when the platform dies). Either way the child sends itself SIGTERM: a Ghost site or an app
 * bundle shuts down as on a normal stop, and the workerd launcher passes the signal to workerd. If
 * the child is still there after `graceMs`, it kills itself.
 */
export function parentWatch(graceMs: number): void {
  const parent = process.ppid;
  let leaving = false;
  const leave = (): void => {
    if (leaving) return;
    leaving = true;
    setTimeout(() => process.kill(process.pid, 'SIGKILL'), graceMs).unref();
    process.kill(process.pid, 'SIGTERM');
  };
  // Only a pipe is watched: run by hand from a terminal or with stdin closed, the child stays.
  const fd0 = process.stdin as NodeJS.ReadStream & { unref?: () => void };
  if (!fd0.isTTY && typeof fd0.unref === 'function') {
    fd0.on('end', leave);
    fd0.on('close', leave);
    fd0.on('error', leave);
    fd0.on('data', () => undefined);
    fd0.unref();
  }
  setInterval(() => {
    if (process.ppid !== parent) leave();
  }, 500).unref();
}

/** How long a child whose platform died has to stop on SIGTERM before it kills itself. */
export const PARENT_GONE_GRACE_MS = 3_000;

/**
 * A directory only this user can use (`<DATA_DIR>/run/preload`, or `dir`): created with mode 0700,
 * checked to be a real directory (not a link) owned by this process's uid with no group or other
 * access, else refused. Nothing another user (a workload's uid) plants there is ever loaded.
 */
export function privateDir(dir = path.join(dataRoot(), 'run', 'preload')): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  const me = typeof process.getuid === 'function' ? process.getuid() : st.uid;
  if (!st.isDirectory() || st.uid !== me)
    throw new Error(`${dir} is not a directory owned by this user; refusing to load code from it`);
  if ((st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
  return dir;
}

/** True when `file` is a regular file (not a link) of this user holding exactly `source`. */
function holds(file: string, source: string): boolean {
  try {
    const st = lstatSync(file);
    const me = typeof process.getuid === 'function' ? process.getuid() : st.uid;
    return st.isFile() && st.uid === me && readFileSync(file, 'utf8') === source;
  } catch {
    return false;
  }
}

/**
 * Writes a preload's source as a file of its own in the private directory, named by its content's
 * hash. A file already there is used only when it is a regular file of this user with exactly that
 * content (checked at every use); otherwise it is written to a fresh temporary name (`wx`: never
 * through an existing file or link) and renamed into place, replacing whatever was there.
 */
export function preloadFile(name: string, source: string, dir?: string): string {
  const root = privateDir(dir);
  const hash = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const file = path.join(root, `${name}-${hash}.cjs`);
  if (holds(file, source)) return file;
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(tmp, source, { mode: 0o644, flag: 'wx' });
  renameSync(tmp, file);
  if (!holds(file, source)) throw new Error(`${file} changed under us`);
  return file;
}

/** The parent watch as a preload file (the function above, compiled, is the whole file). */
export function parentWatchFile(dir?: string): string {
  return preloadFile('platform-parent-watch', `'use strict';\n(${parentWatch.toString()})(${PARENT_GONE_GRACE_MS});\n`, dir);
}
