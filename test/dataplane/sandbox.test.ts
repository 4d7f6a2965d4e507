import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { dataRoot, projectRoot } from '../../core/paths';
import { requestLocal } from '../../core/outbound-http';
import { Edge } from '../../dataplane/edge';
import { ReleaseHost, releaseHost } from '../../dataplane/releases';
import { DEFAULT_SANDBOX_PIDS, resolveSandbox } from '../../dataplane/sandbox';
import { cgroupControllers } from '../../dataplane/sandbox-cgroups';
import { DEFAULT_RELEASE_MEMORY_MB } from '../../dataplane/workerd';
import { Supervisor } from '../../dataplane/supervisor';

/**
 * docs/decisions/0273-tenant-sandbox.md: a tenant's app bundle attacks its own sandbox from inside (test/dataplane/fixtures/probe-app)
 * and reports what it reached. Runs with the sandbox on, as every test does (root, bubblewrap from
 * `platform infra up`, cgroup v1).
 */

const PROBE = path.join(__dirname, 'fixtures', 'probe-app');
const INTERNAL_PORTS = [27017, 9092, 4000, 4101, 4102, 4103, 4104, 4105, 4106, 4107, 4108, 3307, 8080];

describe('an app bundle in its sandbox', () => {
  let r: ProbedRelease;
  let neighbour: string;
  const id = `rel-probe-${process.pid}`;
  const get = (p: string, timeoutMs = 20_000) => r.get(p, timeoutMs);

  beforeAll(async () => {
    r = await startProbedRelease({
      id,
      kind: 'app',
      fixture: PROBE,
      env: { SHOPIFY_API_SECRET: 'tenant-secret' },
      // Another tenant's release directory beside this one, with a secret in it.
      prepare: async (root) => {
        neighbour = path.join(root, 'rel-neighbour', 'bundle');
        await mkdir(neighbour, { recursive: true });
        await writeFile(path.join(neighbour, 'secret.txt'), 'neighbour secret');
      },
    });
  }, 90_000);
  afterAll(() => r?.close());

  it('runs as its own uid, sees only its own processes and environment, and reaches no internal service', async () => {
    const data = dataRoot();
    const marker = `sandbox-marker-${process.pid}`;
    const q = {
      list: [
        projectRoot(),
        data,
        path.join(data, 'keys'),
        path.join(data, 'sites'),
        neighbour,
        path.join(homedir(), '.cache'),
        '/root',
        '/home',
      ],
      read: [path.join(neighbour, 'secret.txt'), '/proc/1/environ', path.join(data, 'keys', 'internal-signing.key')],
      write: [
        `/tmp/${marker}`,
        path.join(data, marker),
        path.join(homedir(), '.cache', marker),
        path.join(r.root, marker),
        path.join(r.root, id, 'bundle', 'own-file'),
        // The release directory around the bundle: the platform writes its config there as root.
        path.join(r.root, id, 'config.capnp'),
      ],
      ports: [...INTERNAL_PORTS, r.hostPort],
    };
    const res = await get(`/probe?q=${encodeURIComponent(JSON.stringify(q))}`);
    expect(res.status).toBe(200);
    const out = JSON.parse(res.body);
    const st = r.supervisor.status(id)!;
    // Its own uid: not root, not the platform's.
    expect(out.uid).not.toBe(0);
    expect(out.uid).not.toBe(process.getuid!());
    expect(out.uid).toBe(st.uid);
    // Only its own processes (bubblewrap's init and itself), and no other process's environment.
    expect(out.pids.length).toBeLessThanOrEqual(3);
    for (const v of Object.values(out.environs)) expect(v).toBe('EACCES');
    // Only its own variables: none of the platform's.
    expect(out.env).toEqual(expect.arrayContaining(['SHOPIFY_API_SECRET', 'PORT']));
    for (const name of Object.keys(process.env)) if (!['PATH', 'HOME', 'PWD'].includes(name)) expect(out.env).not.toContain(name);
    // Nothing of the host's files: the checkout, .data, keys, other tenants, the runtime cache, /root.
    for (const [p, v] of Object.entries(out.lists)) expect([p, v]).toEqual([p, expect.stringMatching(/^(EACCES|ENOENT)$/)]);
    for (const [p, v] of Object.entries(out.reads)) expect([p, v]).toEqual([p, expect.stringMatching(/^(EACCES|ENOENT)$/)]);
    // Writes: its own directory yes; the host's /tmp, .data and the runtime cache never.
    expect(out.writes[path.join(r.root, id, 'bundle', 'own-file')]).toBe('written');
    expect(existsSync(path.join(r.root, id, 'bundle', 'own-file'))).toBe(true);
    for (const p of [
      `/tmp/${marker}`,
      path.join(data, marker),
      path.join(homedir(), '.cache', marker),
      path.join(r.root, marker),
    ])
      expect(existsSync(p)).toBe(false);
    expect(out.writes[path.join(r.root, id, 'config.capnp')]).toBe('EROFS');
    // The host's loopback services refuse (its own network namespace has only its own loopback).
    for (const p of [...INTERNAL_PORTS, r.hostPort]) expect([p, out.ports[p]]).toEqual([p, 'ECONNREFUSED']);
  }, 60_000);

  it('runs under its limits: memory (the release default), processes and an equal CPU share', () => {
    const c = cgroupControllers();
    const memory = r.supervisor.sandbox!.memoryGroup(id);
    const dir = (k: 'memory' | 'pids' | 'cpu') => path.join(c[k]!, path.relative(c.memory!, memory));
    expect(Number(readFileSync(path.join(dir('memory'), 'memory.limit_in_bytes'), 'utf8'))).toBe(
      DEFAULT_RELEASE_MEMORY_MB * 1024 * 1024,
    );
    expect(readFileSync(path.join(dir('pids'), 'pids.max'), 'utf8').trim()).toBe(String(DEFAULT_SANDBOX_PIDS));
    expect(readFileSync(path.join(dir('cpu'), 'cpu.shares'), 'utf8').trim()).toBe('1024');
    // Its processes are in those groups.
    expect(
      readFileSync(path.join(dir('memory'), 'cgroup.procs'), 'utf8')
        .trim()
        .split('\n').length,
    ).toBeGreaterThanOrEqual(2);
  });

  it('is killed past its memory limit, says so, and serves again after the restart', async () => {
    const res = await get('/alloc?mb=3072', 60_000).catch((e: Error) => ({ status: 0, body: e.message }));
    expect(res.status).not.toBe(200);
    await waitFor(() => r.supervisor.status(id)?.lastExit?.reason === 'oom', 20_000);
    await waitFor(async () => (await get('/').catch(() => ({ status: 0 }))).status === 200, 30_000);
    expect(r.supervisor.status(id)!.restarts).toBeGreaterThanOrEqual(1);
  }, 120_000);
});

describe('a storefront (workerd) in its sandbox', () => {
  let r: ProbedRelease;
  const id = `rel-store-${process.pid}`;
  const get = (p: string, timeoutMs = 30_000) => r.get(p, timeoutMs);

  beforeAll(async () => {
    r = await startProbedRelease({
      id,
      kind: 'storefront',
      fixture: path.join(__dirname, 'fixtures', 'probe-storefront'),
      env: {},
    });
  }, 90_000);
  afterAll(() => r?.close());

  it('runs workerd as its own uid in its cgroup, and its fetch() reaches no internal service', async () => {
    const group = r.supervisor.sandbox!.memoryGroup(id);
    const procs = readFileSync(path.join(group, 'cgroup.procs'), 'utf8').trim().split('\n');
    const owners = procs.map((pid) => ({
      comm: readFileSync(`/proc/${pid}/comm`, 'utf8').trim(),
      uid: Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]),
    }));
    expect(owners).toEqual(expect.arrayContaining([{ comm: 'workerd', uid: r.supervisor.status(id)!.uid }]));
    expect(r.supervisor.status(id)!.uid).not.toBe(0);
    const targets = [
      ...INTERNAL_PORTS.map((p) => `http://127.0.0.1:${p}/`),
      `http://127.0.0.1:${r.hostPort}/`,
      'http://10.0.0.1/',
      'http://[::1]:27017/',
    ];
    const res = await get(`/probe?targets=${encodeURIComponent(JSON.stringify(targets))}`);
    expect(res.status).toBe(200);
    const out = JSON.parse(res.body) as Record<string, string>;
    for (const t of targets) expect([t, out[t]]).toEqual([t, expect.stringMatching(/^error: /)]);
  }, 60_000);

  it('cannot take more memory than its limit; the release serves again', async () => {
    await get('/alloc?mb=3072', 60_000).catch(() => undefined);
    await waitFor(async () => (await get('/').catch(() => ({ status: 0 }))).status === 200, 30_000);
    const group = r.supervisor.sandbox!.memoryGroup(id);
    const peak = Number(readFileSync(path.join(group, 'memory.max_usage_in_bytes'), 'utf8'));
    expect(peak).toBeLessThanOrEqual(DEFAULT_RELEASE_MEMORY_MB * 1024 * 1024);
  }, 120_000);
});

interface ProbedRelease {
  root: string;
  supervisor: Supervisor;
  /** A service of the host's on loopback (like the platform's own): the tenant must not reach it. */
  hostPort: number;
  get(p: string, timeoutMs: number): ReturnType<typeof requestLocal>;
  close(): Promise<void>;
}

/** A probing bundle deployed as a release, in the sandbox, behind an edge of its own, through its health gate. */
async function startProbedRelease(o: {
  id: string;
  kind: 'app' | 'storefront';
  fixture: string;
  env: Record<string, string>;
  prepare?: (root: string) => Promise<void>;
}): Promise<ProbedRelease> {
  const sandbox = resolveSandbox({ ...process.env, PLATFORM_SANDBOX: 'on' }).sandbox;
  expect(sandbox).not.toBeNull();
  const supervisor = new Supervisor({ sandbox, initialBackoffMs: 200, stopTimeoutMs: 3_000 });
  const edge = new Edge({ port: 0 });
  await edge.listen();
  const root = await mkdtemp(path.join(tmpdir(), `sandbox-${o.kind}-`));
  const host = new ReleaseHost({ supervisor, edge, releasesRoot: root });
  await o.prepare?.(root);
  await cp(o.fixture, path.join(root, o.id, 'bundle'), { recursive: true });
  const hostListener = http.createServer((_q, s) => s.end('host service')).listen(0, '127.0.0.1');
  await new Promise((r) => hostListener.once('listening', r));
  const close = async () => {
    await host.close();
    await supervisor.shutdown();
    await edge.close();
    hostListener.close();
    await rm(root, { recursive: true, force: true });
  };
  const gate = await host.start({ releaseId: o.id, projectId: `p-${o.kind}`, kind: o.kind, env: o.env });
  if (!gate.healthy) {
    const logs = supervisor.logs(o.id).join(' / ');
    await close();
    throw new Error(`gate: ${JSON.stringify(gate)}; logs: ${logs}`);
  }
  return {
    root,
    supervisor,
    hostPort: (hostListener.address() as { port: number }).port,
    get: (p, timeoutMs) => requestLocal(edge.port, { path: p, headers: { host: releaseHost(o.id) }, timeoutMs }),
    close,
  };
}

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('timed out');
}
