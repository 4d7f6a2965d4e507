import { execFileSync, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { Supervisor, type WorkloadStatus } from '../../dataplane/supervisor';

const FIXTURES = path.join(__dirname, 'fixtures');

async function get(port: number, p = '/'): Promise<{ status: number; body: string }> {
  const r = await fetch(`http://127.0.0.1:${port}${p}`);
  return { status: r.status, body: await r.text() };
}

/** Polls until `f` holds (the tiny server needs a moment to listen). */
async function until<T>(f: () => Promise<T> | T, ok: (v: T) => boolean, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      const v = await f();
      if (ok(v)) return v;
    } catch {
      // not yet
    }
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

const upAt = (port: number) =>
  until(
    () => get(port),
    (r) => r.status === 200,
  );

describe('data plane supervisor', () => {
  let sup: Supervisor;
  beforeEach(() => {
    sup = new Supervisor({
      initialBackoffMs: 100,
      maxBackoffMs: 400,
      stableAfterMs: 5_000,
      maxConsecutiveCrashes: 3,
      stopTimeoutMs: 2_000,
    });
  });
  afterEach(() => sup.removeAll());

  it('runs each workload on its own port with its own env, cwd and memory ceiling', async () => {
    const a = await sup.add({ id: 'a', script: 'tiny-server.js', cwd: FIXTURES, env: { NAME: 'alpha' }, memoryMb: 96 });
    const b = await sup.add({ id: 'b', script: 'tiny-server.js', cwd: FIXTURES, env: (port) => ({ NAME: `beta-${port}` }) });
    expect(a.port).not.toBe(b.port);
    expect(a.state).toBe('stopped');
    sup.start('a');
    sup.start('b');
    const ra = JSON.parse((await upAt(a.port)).body);
    const rb = JSON.parse((await upAt(b.port)).body);
    expect(ra.name).toBe('alpha');
    expect(rb.name).toBe(`beta-${b.port}`);
    expect(ra.cwd).toBe(FIXTURES);
    expect(ra.execArgv).toContain('--max-old-space-size=96');
    expect(rb.execArgv.filter((a: string) => a.startsWith('--max-old-space-size'))).toEqual([]);
    const st = sup.status('a')!;
    expect(st).toMatchObject({ state: 'running', pid: ra.pid, restarts: 0 });
    expect(st.rssBytes).toBeGreaterThan(1024 * 1024);
  });

  it('restarts a crashed process with a growing backoff and counts the restarts', async () => {
    const { port } = await sup.add({ id: 'c', script: 'tiny-server.js', cwd: FIXTURES });
    const states: string[] = [];
    sup.on('state', (s: WorkloadStatus) => s.id === 'c' && states.push(s.state));
    sup.start('c');
    const first = JSON.parse((await upAt(port)).body).pid;
    await get(port, '/crash');
    await until(
      () => sup.status('c')!,
      (s) => s.state === 'backoff',
    );
    expect(sup.status('c')!.lastExit).toMatchObject({ code: 1 });
    expect(sup.status('c')!.nextRestartAt).not.toBeNull();
    const second = JSON.parse((await upAt(port)).body).pid;
    expect(second).not.toBe(first);
    expect(sup.status('c')).toMatchObject({ state: 'running', restarts: 1, port });
    expect(states).toEqual(['running', 'backoff', 'running']);
  });

  it('gives up on a workload that keeps crashing, with backoffs that double up to the cap', async () => {
    await sup.add({ id: 'd', script: 'tiny-server.js', cwd: FIXTURES, env: { CRASH_ON_START: '1' } });
    const delays: number[] = [];
    sup.on('state', (s: WorkloadStatus) => {
      if (s.id === 'd' && s.state === 'backoff') delays.push(Date.parse(s.nextRestartAt!) - Date.now());
    });
    const started = Date.now();
    sup.start('d');
    await until(
      () => sup.status('d')!,
      (s) => s.state === 'failed',
    );
    // 100 + 200 + 400 ms of backoff before the fourth crash gives up.
    expect(Date.now() - started).toBeGreaterThanOrEqual(650);
    expect(delays.length).toBe(3);
    expect(delays[1]).toBeGreaterThan(delays[0] + 50);
    expect(delays[2]).toBeGreaterThan(delays[1] + 100);
    expect(sup.status('d')).toMatchObject({ state: 'failed', restarts: 3, lastExit: { code: 3 } });
    // start clears the streak and tries again.
    sup.start('d');
    await until(
      () => sup.status('d')!,
      (s) => s.state === 'backoff' || s.state === 'failed',
    );
  });

  it('stops, starts and restarts on request without counting a crash', async () => {
    const { port } = await sup.add({ id: 'e', script: 'tiny-server.js', cwd: FIXTURES });
    sup.start('e');
    const p1 = JSON.parse((await upAt(port)).body).pid;
    const stopped = await sup.stop('e');
    expect(stopped).toMatchObject({ state: 'stopped', pid: null, restarts: 0 });
    await expect(get(port)).rejects.toThrow();
    // Stays stopped: no automatic restart.
    await new Promise((r) => setTimeout(r, 300));
    expect(sup.status('e')!.state).toBe('stopped');
    sup.start('e');
    const p2 = JSON.parse((await upAt(port)).body).pid;
    await sup.restart('e');
    const p3 = JSON.parse((await upAt(port)).body).pid;
    expect(new Set([p1, p2, p3]).size).toBe(3);
    expect(sup.status('e')).toMatchObject({ state: 'running', restarts: 0 });
  });

  it('kills a process that ignores SIGTERM after the stop timeout', async () => {
    const quick = new Supervisor({ stopTimeoutMs: 300 });
    try {
      const { port } = await quick.add({ id: 'stubborn', script: 'stubborn-server.js', cwd: FIXTURES });
      quick.start('stubborn');
      await upAt(port);
      const t = Date.now();
      const st = await quick.stop('stubborn');
      expect(Date.now() - t).toBeGreaterThanOrEqual(250);
      expect(st).toMatchObject({ state: 'stopped', lastExit: { signal: 'SIGKILL' } });
    } finally {
      await quick.removeAll();
    }
  });

  it('releases the port on removal and refuses a port another workload holds', async () => {
    const { port } = await sup.add({ id: 'f', script: 'tiny-server.js', cwd: FIXTURES });
    await expect(sup.add({ id: 'g', script: 'tiny-server.js', cwd: FIXTURES, port })).rejects.toThrow(/taken/);
    sup.start('f');
    await upAt(port);
    await sup.remove('f');
    expect(sup.status('f')).toBeNull();
    await expect(get(port)).rejects.toThrow();
    const g = await sup.add({ id: 'g', script: 'tiny-server.js', cwd: FIXTURES, port });
    expect(g.port).toBe(port);
  });

  it('kills its workloads when the platform process exits without stopping them', async () => {
    // Runs the compiled supervisor (`npm run build` first), as the platform process does.
    const pid = Number(
      execFileSync(process.execPath, [path.join(FIXTURES, 'exiting-supervisor.js')])
        .toString()
        .trim(),
    );
    expect(pid).toBeGreaterThan(0);
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    await until(alive, (a) => !a, 5_000);
  });

  it('leaves no workload running when the platform process is killed with SIGKILL (site, app bundle, workerd)', async () => {
    // Runs the compiled supervisor (`npm run build` first); a SIGKILL runs no exit handler in the platform.
    const platform = spawn(process.execPath, [path.join(FIXTURES, 'killed-platform.js')], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      platform.stdout.setEncoding('utf8').on('data', (c: string) => {
        out += c;
        if (out.includes('\n')) resolve(out.split('\n')[0]);
      });
      platform.once('exit', (code) => reject(new Error(`the platform stand-in exited (${code}) before its workloads ran`)));
    });
    const started = JSON.parse(line) as { site: number; app: number; sandboxed: number[]; releaseDir: string };
    // The storefront runs in the sandbox: bubblewrap, its init, the launcher and workerd, all in its cgroup.
    expect(started.sandboxed.length).toBeGreaterThanOrEqual(4);
    const pids: Record<string, number> = { site: started.site, app: started.app };
    started.sandboxed.forEach((pid, i) => (pids[`storefront-${i}`] = pid));
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    for (const pid of Object.values(pids)) expect(alive(pid)).toBe(true);
    const t = Date.now();
    platform.kill('SIGKILL');
    try {
      await until(
        () => Object.entries(pids).filter(([, pid]) => alive(pid)),
        (left) => left.length === 0,
        5_000,
      );
    } catch {
      const left = Object.entries(pids).filter(([, pid]) => alive(pid));
      for (const [, pid] of left) process.kill(pid, 'SIGKILL');
      throw new Error(`still running 5 s after the platform was killed: ${left.map(([n, p]) => `${n} (${p})`).join(', ')}`);
    } finally {
      rmSync(started.releaseDir, { recursive: true, force: true });
    }
    expect(Date.now() - t).toBeLessThan(5_000);
  });
});
