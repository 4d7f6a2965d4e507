import { readFileSync } from 'node:fs';

/**
 * True while a process with this pid exists and has not exited: signal 0 reaches it (or is refused
 * only for lack of permission), and it is not a zombie (exited, not yet reaped, which still answers
 * signal 0).
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}
