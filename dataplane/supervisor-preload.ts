import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

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

let written: string | null = null;

/**
 * The preload as a file of its own (written once per content, beside the system's temporary files),
 * so it works the same from `dist/` and under the test runner: the function above, compiled, is the
 * whole file.
 */
export function parentWatchFile(dir = tmpdir()): string {
  if (written && existsSync(written)) return written;
  const source = `'use strict';\n(${parentWatch.toString()})(${PARENT_GONE_GRACE_MS});\n`;
  const hash = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const file = path.join(dir, `platform-parent-watch-${hash}.cjs`);
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, source, { mode: 0o644 });
    renameSync(tmp, file);
  }
  written = file;
  return file;
}
