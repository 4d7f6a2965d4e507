import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { LoadFigures, LoadTarget } from './load-stats';

/** What the forwarder benches share (bench/commerce-edge.ts, bench/edge-engines.ts): load in a process of its own, CPU from /proc. */

const TICK_US = 1e6 / 100; // USER_HZ is 100 on Linux

export type Figures = LoadFigures & { clientUs: number };

/** The load generator in a process of its own: its CPU (reported per request) is neither the forwarder's nor workerd's. */
export function loadInProcess(target: LoadTarget, concurrency: number, seconds: number, warmup: number): Promise<Figures> {
  const script = `const c0 = process.cpuUsage(); require(${JSON.stringify(path.join(__dirname, 'load-stats'))}).load(${JSON.stringify(target)}, ${concurrency}, ${seconds}, ${warmup}).then((f) => { const u = process.cpuUsage(c0); process.stdout.write(JSON.stringify({ ...f, clientUs: (u.user + u.system) / (f.requests + ${warmup}) })); }, (e) => { console.error(e.message); process.exit(1); });`;
  return jsonOfScript<Figures>(script);
}

/** Runs `script` in a Node process of its own and answers the JSON it writes to stdout. */
export function jsonOfScript<T>(script: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as T) : reject(new Error(`load exited ${code}`))));
  });
}

/** utime + stime of a process, in µs (0 when it is gone). */
export function cpuOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * TICK_US;
  } catch {
    return 0;
  }
}

/** The children of a process (the launcher's child is workerd; nginx's master's are its workers). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return out;
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** This process's CPU so far, in µs. */
export const selfCpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
