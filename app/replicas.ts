import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Config } from '../core/config';
import { childLogger } from '../core/logger';
import { projectRoot } from '../core/paths';
import { portAnswers } from '../infra/tools';
import { areas, subgraphPort } from './areas';
import { RoundRobin } from './round-robin';

/**
 * The young-generation size each replica runs with (decision 0252): the one this process was started
 * with, else the 64 MiB that `npm start` and the image use.
 */
export function replicaHeapFlags(execArgv: readonly string[] = process.execArgv): string[] {
  const parent = execArgv.filter((a) => a.startsWith('--max-semi-space-size'));
  return parent.length > 0 ? parent : ['--max-semi-space-size=64'];
}
const HEAP_FLAGS = replicaHeapFlags();

/**
 * `platform start --replicas N`: N processes of the bridge, of the router and of each subgraph,
 * each a plain `platform start <role>` child on its own port, with a round-robin front
 * (app/round-robin.ts) on each role's usual port — BRIDGE_PORT for the bridges, ROUTER_PORT for
 * the routers (the bridges' ROUTER_URL), each subgraph's own port (the routers'
 * SUBGRAPH_URL_<NAME>). Every replica of an area runs that area's executors, consumers and
 * workers: they share the work through the database (operation claims and leases, the outbox
 * relay's lease, delivery claims) and Kafka consumer groups, so nothing runs twice
 * (docs/decisions/0200-replicas-and-kafka-cluster.md). A replica that exits is started again on
 * its port after `respawnMs` (as a container runtime's restart policy would).
 */
export type ReplicaRole = { kind: 'bridge' } | { kind: 'router' } | { kind: 'subgraph'; name: string };

export interface ReplicaPlan {
  bridges: number;
  routers: number;
  /** Replicas of each subgraph. */
  subgraphs: number;
  /** Only these subgraphs (default: every area). The router answers 502 for fields of the others. */
  only?: string[];
}

export interface ReplicaOptions {
  plan: ReplicaPlan;
  config: Config;
  /** The environment every child gets (ports and addresses are set on top). */
  env?: NodeJS.ProcessEnv;
  /** Front ports: 0 picks free ones (trials). Default: the configured BRIDGE_PORT, ROUTER_PORT, SUBGRAPH_BASE_PORT. */
  bridgePort?: number;
  routerPort?: number;
  subgraphBasePort?: number;
  /** The {cdn_url} front's port (default CDN_PORT). */
  cdnPort?: number;
  /** Start a replica again this long after it exits (undefined: never). Default 300 ms. */
  respawnMs?: number | null;
  /** Where each replica's output goes: <logDir>/<role>-<i>.log. */
  logDir?: string;
}

export interface Replica {
  role: ReplicaRole;
  index: number;
  label: string;
  url: string;
  /** A subgraph replica's own {cdn_url} listener (served by the assets area). */
  cdnUrl?: string;
  /** The running process's pid (undefined while it is restarting). */
  pid(): number | undefined;
  /** Times this replica was started (1 at first). */
  starts: number;
  /** Resolves once the replica's port answers again. */
  ready(timeoutMs?: number): Promise<void>;
}

export interface ReplicaSet {
  bridgeUrl: string;
  routerUrl: string;
  subgraphUrls: Record<string, string>;
  replicas: Replica[];
  fronts: RoundRobin[];
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 180_000;

export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, host, () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

const labelOf = (r: ReplicaRole, i: number) => `${r.kind === 'subgraph' ? `subgraph-${r.name}` : r.kind}-${i + 1}`;

async function waitForPort(port: number, host: string, timeoutMs: number, gone: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await portAnswers(port, host, 500))) {
    if (gone()) throw new Error(`a replica exited before it listened on ${host}:${port}`);
    if (Date.now() > deadline) throw new Error(`no replica answered on ${host}:${port} within ${Math.round(timeoutMs / 1000)} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Starts the replicas and their fronts; resolves when every replica listens. */
export async function startReplicas(opts: ReplicaOptions): Promise<ReplicaSet> {
  const cfg = opts.config;
  const host = cfg.HOST;
  const log = childLogger('replicas');
  const names = (opts.plan.only ?? areas().map((a) => a.name)).filter((n) => areas().some((a) => a.name === n));
  const respawnMs = opts.respawnMs === undefined ? 300 : opts.respawnMs;
  const logDir = opts.logDir ?? path.resolve(projectRoot(), cfg.DATA_DIR, 'logs', 'replicas');
  fs.mkdirSync(logDir, { recursive: true });

  // Fronts first: their addresses go into every child's environment.
  const fronts: RoundRobin[] = [];
  const front = async (port: number) => {
    const rr = new RoundRobin({ targets: [] });
    fronts.push(rr);
    return { rr, url: await rr.listen(port, host) };
  };
  const bridgeFront = await front(opts.bridgePort ?? cfg.BRIDGE_PORT);
  const routerFront = await front(opts.routerPort ?? cfg.ROUTER_PORT);
  const base = opts.subgraphBasePort ?? cfg.SUBGRAPH_BASE_PORT;
  const subgraphFronts: Record<string, { rr: RoundRobin; url: string }> = {};
  for (const a of areas()) subgraphFronts[a.name] = await front(base === 0 ? 0 : subgraphPort(a.name, base));

  // {cdn_url}: the assets replicas' CDN listeners behind one front, so a signed URL one replica
  // handed out is served by any of them.
  const cdnFront = await front(opts.cdnPort ?? cfg.CDN_PORT);
  const shared: NodeJS.ProcessEnv = {
    ...(opts.env ?? process.env),
    HOST: host,
    ROUTER_URL: `${routerFront.url}/graphql`,
    BASE_URL: cfg.BASE_URL ?? bridgeFront.url,
    CDN_URL: cfg.CDN_URL ?? cdnFront.url,
    ...Object.fromEntries(
      Object.entries(subgraphFronts).map(([n, f]) => [`SUBGRAPH_URL_${n.toUpperCase()}`, `${f.url}/graphql`]),
    ),
  };

  let stopping = false;
  const children = new Set<ChildProcess>();
  const replicas: Replica[] = [];

  async function launch(role: ReplicaRole, index: number): Promise<Replica> {
    const port = await freePort(host);
    const env: NodeJS.ProcessEnv = { ...shared };
    const args = ['start'];
    if (role.kind === 'bridge') {
      args.push('bridge');
      env.BRIDGE_PORT = String(port);
    } else if (role.kind === 'router') {
      args.push('router');
      env.ROUTER_PORT = String(port);
    } else {
      args.push('subgraph', role.name);
      env.SUBGRAPH_BASE_PORT = String(port - subgraphPort(role.name, 0));
      // The listeners a subgraph process may run besides its own: free ports, not the shared defaults.
      env.CDN_PORT = String(await freePort(host));
      env.EDGE_PORT = String(await freePort(host));
    }
    const label = labelOf(role, index);
    const url = `http://${host}:${port}`;
    let child: ChildProcess | undefined;
    const replica: Replica = {
      role,
      index,
      label,
      url,
      cdnUrl: env.CDN_PORT ? `http://${host}:${env.CDN_PORT}` : undefined,
      starts: 0,
      pid: () => (child && child.exitCode === null && child.signalCode === null ? child.pid : undefined),
      ready: (timeoutMs = READY_TIMEOUT_MS) => waitForPort(port, host, timeoutMs, () => stopping),
    };
    const run = () => {
      const out = fs.openSync(path.join(logDir, `${label}.log`), 'a');
      const c = spawn(process.execPath, [...HEAP_FLAGS, path.join(projectRoot(), 'bin', 'platform.js'), ...args], {
        env,
        stdio: ['ignore', out, out],
      });
      fs.closeSync(out);
      child = c;
      replica.starts++;
      children.add(c);
      c.once('exit', (code, signal) => {
        children.delete(c);
        if (stopping) return;
        log.warn({ replica: label, code, signal }, 'replica exited');
        if (respawnMs !== null) setTimeout(() => !stopping && run(), respawnMs).unref();
      });
    };
    run();
    return replica;
  }

  const plan: ReplicaRole[][] = [
    ...names.map((name) => Array.from({ length: opts.plan.subgraphs }, () => ({ kind: 'subgraph', name }) as ReplicaRole)),
    Array.from({ length: opts.plan.routers }, () => ({ kind: 'router' }) as ReplicaRole),
    Array.from({ length: opts.plan.bridges }, () => ({ kind: 'bridge' }) as ReplicaRole),
  ];
  try {
    for (const group of plan) {
      const started = await Promise.all(group.map((role, i) => launch(role, i)));
      replicas.push(...started);
    }
    const targets = (f: (r: Replica) => boolean) => replicas.filter(f).map((r) => r.url);
    bridgeFront.rr.setTargets(targets((r) => r.role.kind === 'bridge'));
    routerFront.rr.setTargets(targets((r) => r.role.kind === 'router'));
    // Only the assets area serves {cdn_url}; the other subgraphs' CDN ports stay unused.
    cdnFront.rr.setTargets(replicas.filter((r) => r.role.kind === 'subgraph' && r.role.name === 'assets').map((r) => r.cdnUrl!));
    for (const n of names) subgraphFronts[n].rr.setTargets(targets((r) => r.role.kind === 'subgraph' && r.role.name === n));
    await Promise.all(replicas.map((r) => r.ready()));
  } catch (e) {
    await stopAll();
    throw e;
  }

  async function stopAll(): Promise<void> {
    stopping = true;
    const exits = [...children].map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          const t = setTimeout(() => c.kill('SIGKILL'), 20_000);
          c.once('exit', () => {
            clearTimeout(t);
            resolve();
          });
          c.kill('SIGTERM');
        }),
    );
    await Promise.all(exits);
    await Promise.all(fronts.map((f) => f.close()));
  }

  log.info(
    { bridgeUrl: bridgeFront.url, routerUrl: routerFront.url, replicas: replicas.map((r) => `${r.label} ${r.url}`) },
    'replicas started',
  );
  return {
    bridgeUrl: bridgeFront.url,
    routerUrl: routerFront.url,
    subgraphUrls: Object.fromEntries(names.map((n) => [n, subgraphFronts[n].url])),
    replicas,
    fronts,
    stop: stopAll,
  };
}
