import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { PerformanceObserver } from 'node:perf_hooks';
import type { Platform } from '../app/platform';
import { mongoCommandsSent } from '../core/telemetry/mongo';
import { type LoadFigures, type LoadTarget, loadInWorker } from './load-stats';

/**
 * What the sections of `npm run bench` share (bench/run-all.ts runs them, bench/sections.ts holds
 * them): the knobs, the table's rows, the load measured beside its baseline, and a bench site.
 */
export const run = promisify(execFile);
export const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
export const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
export const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',').map((s) => s.trim())) : null;

export interface Row {
  figure: string;
  subject: string;
  baseline: string;
  ratio: string;
  goal: string;
}
export const rows: Row[] = [];
export const wanted = (name: string, optIn = false) => (ONLY ? ONLY.has(name) : !optIn);

export const f0 = (n: number) => n.toFixed(0);
export const f1 = (n: number) => n.toFixed(1);

/**
 * How many MongoDB commands every connection of this process (the platform's and the plain
 * handler's) has sent so far, as the platform's own telemetry counts them (core/telemetry/mongo.ts).
 */
export const commandsSoFar = mongoCommandsSent;

/** Milliseconds this thread (the servers' thread; the load client runs in a worker) has spent in GC. */
let gcMs = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcMs += e.duration;
}).observe({ entryTypes: ['gc'] });
export const gcSoFar = () => gcMs;

/**
 * Load figures plus what each request cost this process: CPU ms (all threads), MongoDB commands, and
 * garbage-collection pause ms on the servers' thread.
 */
export interface Figures extends LoadFigures {
  cpuMs: number;
  commands: number;
  gcMs: number;
}

export async function measured(t: LoadTarget, concurrency = CONCURRENCY): Promise<Figures> {
  // Warm-up first (untimed), so caches and connections are in the state a steady load sees.
  await loadInWorker(t, concurrency, 0.5, 50);
  const cpu0 = process.cpuUsage();
  const cmd0 = mongoCommandsSent();
  const gc0 = gcMs;
  const f = await loadInWorker(t, concurrency, SECONDS, 0);
  const cpu = process.cpuUsage(cpu0);
  return {
    ...f,
    cpuMs: (cpu.user + cpu.system) / 1000 / f.requests,
    commands: (mongoCommandsSent() - cmd0) / f.requests,
    gcMs: (gcMs - gc0) / f.requests,
  };
}

/** Subject and baseline in alternating order, ROUNDS each; figures averaged over the rounds. */
export async function sideBySide(subject: LoadTarget, baseline: LoadTarget): Promise<{ s: Figures; b: Figures }> {
  return alternating(
    () => measured(subject),
    () => measured(baseline),
  );
}

/**
 * Several named targets at concurrency 1, ROUNDS rounds in alternating order (forwards, then
 * backwards); answers the mean of a figure of a target over the rounds.
 */
export async function meansOfSerial(
  targets: Array<[string, () => LoadTarget]>,
): Promise<(name: string, k: keyof Figures) => number> {
  const figures = new Map<string, Figures[]>();
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, target] of r % 2 === 0 ? targets : [...targets].reverse()) {
      figures.set(name, [...(figures.get(name) ?? []), await measured(target(), 1)]);
    }
  }
  return (name, k) => {
    const xs = figures.get(name)!;
    return xs.reduce((a, x) => a + x[k], 0) / xs.length;
  };
}

/** Two measurements in alternating order, ROUNDS each (load on the machine hits both alike); averaged. */
export async function alternating(
  subject: () => Promise<Figures>,
  baseline: () => Promise<Figures>,
): Promise<{ s: Figures; b: Figures }> {
  const s: Figures[] = [];
  const b: Figures[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    if (r % 2 === 0) {
      s.push(await subject());
      b.push(await baseline());
    } else {
      b.push(await baseline());
      s.push(await subject());
    }
  }
  const avg = (xs: Figures[], k: keyof Figures) => xs.reduce((a, x) => a + x[k], 0) / xs.length;
  const mean = (xs: Figures[]): Figures => ({
    rps: avg(xs, 'rps'),
    p50: avg(xs, 'p50'),
    p99: avg(xs, 'p99'),
    requests: xs.reduce((a, x) => a + x.requests, 0),
    cpuMs: avg(xs, 'cpuMs'),
    commands: avg(xs, 'commands'),
    gcMs: avg(xs, 'gcMs'),
  });
  return { s: mean(s), b: mean(b) };
}

export function loadRows(name: string, fig: { s: Figures; b: Figures }, goals: { rps?: number; p99?: number } = {}) {
  loadRowsAt(name, fig, goals, CONCURRENCY);
}

export function loadRowsAt(
  name: string,
  fig: { s: Figures; b: Figures },
  goals: { rps?: number; p99?: number },
  concurrency: number,
) {
  const { s, b } = fig;
  const ratio = s.rps / b.rps;
  rows.push({
    figure: `${name}: req/s (c=${concurrency})`,
    subject: f0(s.rps),
    baseline: f0(b.rps),
    ratio: ratio.toFixed(2),
    goal: goals.rps ? `≥ ${goals.rps} ${ratio >= goals.rps ? 'met' : 'NOT met'}` : '',
  });
  const p99 = s.p99 / b.p99;
  rows.push({
    figure: `${name}: p50 / p99 ms`,
    subject: `${f1(s.p50)} / ${f1(s.p99)}`,
    baseline: `${f1(b.p50)} / ${f1(b.p99)}`,
    ratio: `${(s.p50 / b.p50).toFixed(2)} / ${p99.toFixed(2)}`,
    goal: goals.p99 ? `p99 ≤ ${goals.p99}× ${p99 <= goals.p99 ? 'met' : 'NOT met'}` : '',
  });
  rows.push({
    figure: `${name}: CPU ms / request (process)`,
    subject: s.cpuMs.toFixed(2),
    baseline: b.cpuMs.toFixed(2),
    ratio: (s.cpuMs / b.cpuMs).toFixed(2),
    goal: '',
  });
  rows.push({
    figure: `${name}: GC pause ms / request (servers' thread)`,
    subject: s.gcMs.toFixed(2),
    baseline: b.gcMs.toFixed(2),
    ratio: (s.gcMs / b.gcMs).toFixed(2),
    goal: '',
  });
  rows.push({
    figure: `${name}: MongoDB commands / request`,
    subject: s.commands.toFixed(2),
    baseline: b.commands.toFixed(2),
    ratio: (s.commands / b.commands).toFixed(2),
    goal: '',
  });
}

export async function postJson(url: string, key: string, body: unknown): Promise<any> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

async function waitOperation(bridge: string, key: string, projectId: string, operationId: string): Promise<void> {
  const until = Date.now() + 60_000;
  for (;;) {
    const res = await fetch(`${bridge}/api/v1/publisher/projects/${projectId}/operations/${operationId}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const op = ((await res.json()) as { data?: { status: string } }).data;
    if (op?.status === 'completed') return;
    if (op?.status === 'failed' || Date.now() > until) throw new Error(`operation ${operationId}: ${JSON.stringify(op)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A running hosted site with `points` completed recovery points; returns its project id. */
export async function benchSite(platform: Platform, key: string, points: number): Promise<string> {
  const bridge = platform.bridgeUrl!;
  const created = await postJson(`${bridge}/api/v1/publisher/sites`, key, { name: 'Bench site' });
  if (created.status !== 202) throw new Error(`create site: ${JSON.stringify(created.body)}`);
  const projectId = created.body.data.project.id as string;
  await waitOperation(bridge, key, projectId, created.body.data.operation.id);
  if (points > 0) {
    const rp = await postJson(`${bridge}/api/v1/publisher/projects/${projectId}/recovery-points`, key, { reason: 'bench' });
    if (rp.status !== 202) throw new Error(`recovery point: ${JSON.stringify(rp.body)}`);
    await waitOperation(bridge, key, projectId, rp.body.data.operation.id);
    // The rest are copies of the real one (a real point takes a lifecycle operation each).
    const RecoveryPoint = platform.services.publisher.sites.models.RecoveryPoint;
    const model = await RecoveryPoint.findById(rp.body.data.recovery_point.id).lean();
    const t0 = Date.now();
    const copies = Array.from({ length: points - 1 }, (_, i) => ({
      ...model!,
      _id: `${model!._id.slice(0, 24)}${String(i).padStart(12, '0')}`,
      createdAt: new Date(t0 - (i + 1) * 60_000),
    }));
    if (copies.length) await RecoveryPoint.insertMany(copies);
  }
  return projectId;
}

/**
 * Starts the platform, trying again (up to 3 times) when the engines do not answer within the
 * platform's short server-selection timeout: on a loaded machine the first connection can miss it.
 */
export async function startPatiently<T>(start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (e) {
      if (attempt >= 3 || !/Server selection timed out|ECONNREFUSED|KafkaJS/i.test(String(e))) throw e;
      console.error(`engines did not answer in time (${(e as Error).message.slice(0, 80)}); starting again`);
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
}
