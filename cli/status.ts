import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Connection } from 'mongoose';
import type { Platform, ProcessRole } from '../app/platform';
import type { EventBus } from '../core/events/event-bus';
import { platformProbe } from '../core/telemetry/probes';
import { processStart, stillRuns } from './stand-ins';

/** How long `platform status` waits for each engine and each process before calling it unreachable: 5 s. */
const STATUS_WAIT_MS = 5_000;

/** What `platform start` records about itself under `<DATA_DIR>/processes/<pid>.json`, for `platform status`. */
export interface ProcessRecord {
  pid: number;
  /** When the process started (cli/stand-ins.ts `processStart`): a later process given the same id is not it. */
  pid_start?: number | null;
  role: string;
  started_at: string;
  bridge_url?: string;
  router_url?: string;
  cdn_url?: string;
  subgraph_urls: Record<string, string>;
}

export interface StatusReport {
  processes: Array<ProcessRecord & { alive: boolean; ready: string }>;
  engines: { mongodb: 'ok' | 'unreachable'; kafka: 'ok' | 'unreachable' };
  operations: {
    by_type: Array<{ type: string; status: string; count: number }>;
    oldest_pending: { id: string; type: string; age_s: number } | null;
  } | null;
  outbox: Array<{ collection: string; pending: number; oldest_age_s: number | null }> | null;
  consumer_lag: Array<{ group: string; topic: string; lag: number }> | null;
}

const roleName = (r: ProcessRole) => (r.kind === 'subgraph' ? `subgraph:${r.name}` : r.kind);

/** Records a started process; returns the function that removes the record when it stops. */
export async function recordProcess(dir: string, role: ProcessRole, p: Platform): Promise<() => Promise<void>> {
  const record: ProcessRecord = {
    pid: process.pid,
    pid_start: processStart(process.pid),
    role: roleName(role),
    started_at: new Date().toISOString(),
    bridge_url: p.bridgeUrl,
    router_url: p.routerUrl,
    cdn_url: p.cdnUrl,
    subgraph_urls: p.subgraphUrls,
  };
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `${process.pid}.json`);
  await writeFile(file, `${JSON.stringify(record, null, 2)}\n`);
  return () => rm(file, { force: true });
}

function within<T>(p: Promise<T>, ms = STATUS_WAIT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timed out')), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

async function readiness(r: ProcessRecord): Promise<string> {
  const url = r.bridge_url ? `${r.bridge_url}/readyz` : r.router_url ? r.router_url.replace(/\/graphql$/, '/healthz') : undefined;
  const any = url ?? Object.values(r.subgraph_urls)[0]?.replace(/\/graphql$/, '/metrics');
  if (!any) return 'unknown';
  try {
    const res = await within(fetch(any), 2_000);
    return res.ok ? 'ready' : `not ready (${res.status})`;
  } catch {
    return 'unreachable';
  }
}

/** The processes `platform start` recorded; records of processes that died without cleaning up are dropped. */
export async function readProcesses(dir: string): Promise<StatusReport['processes']> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const out: StatusReport['processes'] = [];
  for (const name of names.filter((n) => n.endsWith('.json'))) {
    const record = JSON.parse(await readFile(path.join(dir, name), 'utf8')) as ProcessRecord;
    if (!stillRuns({ pid: record.pid, pidStart: record.pid_start })) {
      await rm(path.join(dir, name), { force: true });
      continue;
    }
    out.push({ ...record, alive: true, ready: await readiness(record) });
  }
  return out.sort((a, b) => a.pid - b.pid);
}

/**
 * Everything `platform status` shows, read from the engines: unfinished operations, the oldest
 * pending one, outbox backlog per collection, and the lag of the platform's consumer groups
 * (those named `<topic prefix>.<area>.<consumer>`). Any engine down leaves its parts `null`.
 */
export async function collectStatus(opts: {
  conn?: Connection;
  bus?: EventBus;
  topicPrefix: string;
  processesDir: string;
}): Promise<StatusReport> {
  const probe = opts.conn ? platformProbe(opts.conn, opts.bus) : undefined;
  const [processes, ops, outbox, lag] = await Promise.all([
    readProcesses(opts.processesDir),
    probe ? within(probe.operations()).catch(() => null) : null,
    probe ? within(probe.outbox()).catch(() => null) : null,
    opts.bus?.consumerLag
      ? within(opts.bus.consumerLag((g) => g.startsWith(`${opts.topicPrefix}.`))).catch(() => null)
      : Promise.resolve(null),
  ]);
  return {
    processes,
    engines: { mongodb: ops ? 'ok' : 'unreachable', kafka: lag ? 'ok' : 'unreachable' },
    operations: ops && {
      by_type: ops.counts.sort((a, b) => a.type.localeCompare(b.type) || a.status.localeCompare(b.status)),
      oldest_pending: ops.oldestPending
        ? { id: ops.oldestPending.id, type: ops.oldestPending.type, age_s: round(ops.oldestPending.ageS) }
        : null,
    },
    outbox:
      outbox &&
      outbox.map((o) => ({
        collection: o.collection,
        pending: o.pending,
        oldest_age_s: o.oldestAgeS === null ? null : round(o.oldestAgeS),
      })),
    consumer_lag:
      lag && lag.map((l) => ({ group: l.groupId, topic: l.topic, lag: l.lag })).sort((a, b) => a.group.localeCompare(b.group)),
  };
}

const round = (s: number) => Math.round(s * 10) / 10;
const age = (s: number | null) =>
  s === null ? '-' : s < 120 ? `${s.toFixed(1)} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${Math.round(s / 3600)} h`;

/** One screen of text. */
export function formatStatus(s: StatusReport): string {
  const lines: string[] = [];
  lines.push(`engines      MongoDB ${s.engines.mongodb}   Kafka ${s.engines.kafka}`);
  lines.push('processes');
  if (s.processes.length === 0) lines.push('  (none recorded: `platform start` writes one entry per running process)');
  for (const p of s.processes) {
    const urls = [p.bridge_url && `bridge ${p.bridge_url}`, p.router_url && `router ${p.router_url}`].filter(Boolean).join('  ');
    lines.push(`  pid ${String(p.pid).padEnd(7)} ${p.role.padEnd(18)} ${p.ready.padEnd(12)} since ${p.started_at}  ${urls}`);
  }
  lines.push('operations (unfinished)');
  if (!s.operations) lines.push('  (MongoDB unreachable)');
  else {
    if (s.operations.by_type.length === 0) lines.push('  none');
    for (const o of s.operations.by_type) lines.push(`  ${o.type.padEnd(28)} ${o.status.padEnd(8)} ${o.count}`);
    const oldest = s.operations.oldest_pending;
    lines.push(`  oldest pending: ${oldest ? `${oldest.type} ${oldest.id}, waiting ${age(oldest.age_s)}` : 'none'}`);
  }
  lines.push('outbox backlog');
  if (!s.outbox) lines.push('  (MongoDB unreachable)');
  else {
    const waiting = s.outbox.filter((o) => o.pending > 0);
    if (waiting.length === 0) lines.push(`  empty (${s.outbox.length} collections)`);
    for (const o of waiting)
      lines.push(`  ${o.collection.padEnd(28)} ${String(o.pending).padEnd(6)} oldest ${age(o.oldest_age_s)}`);
  }
  lines.push('consumer lag');
  if (!s.consumer_lag) lines.push('  (Kafka unreachable)');
  else {
    if (s.consumer_lag.length === 0) lines.push('  no consumer groups');
    for (const l of s.consumer_lag) lines.push(`  ${l.group.padEnd(40)} ${l.topic.padEnd(36)} ${l.lag}`);
  }
  return lines.join('\n');
}
