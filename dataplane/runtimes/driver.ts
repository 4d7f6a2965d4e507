import { lstat } from 'node:fs/promises';
import path from 'node:path';
import type { InstalledRuntime, ProgressFn, RuntimeCache, RuntimeSpec } from '../runtime-cache';
import type { MysqlSiteDatabase } from '../site-database';
import type { WorkloadSpec } from '../supervisor';

/**
 * A runtime driver (docs/decisions/0285-one-road-to-a-machine.md): what one kind of hosted software
 * needs to run on a node, behind one interface, as Nomad's task drivers and the kubelet's container
 * runtime interface split it. The site host (dataplane/sites.ts), the supervisor, the edge and the
 * node agent know this interface and the catalog's runtime name, never the software: adding a
 * runtime is one driver file here plus its entries in the area's catalog.
 *
 * The host owns the generic part of a workload's life: install (the runtime cache), the supervisor
 * entry and its sandbox, waiting for the probe, routing the edge, stopping, removing. The driver
 * says what is particular: the files a first start needs, the command and environment, the
 * sandbox's mounts and egress, what "answers" means, the first set-up, and where its data lives
 * for backups.
 */

/** A workload as the host hands it to its driver. */
export interface DriverWorkload {
  /** The workload id (the site's id). */
  id: string;
  /** The installed release's directory. */
  runtimeDir: string;
  /** The workload's own directory (`<sites root>/<id>/`), read-write inside its sandbox. */
  dir: string;
  /** The public address it is served at, through the edge. */
  url: string;
  /** The release's memory floor (or a plan's limit), in MiB. */
  memoryMb?: number;
  /** Further configuration as environment (mail, …). */
  config?: Record<string, string>;
  /** Its MySQL database, when it has one instead of a file. */
  database?: MysqlSiteDatabase;
  /** Outside services it is bound to, by name, e.g. `{ 'commerce-platform': url }`: its only egress beside its database. */
  upstreams?: Record<string, string>;
}

/** Where a workload can be reached: a port on loopback, or the sandbox's unix socket. */
export interface DriverEndpoint {
  port: number;
  socketPath?: string;
}

/** Who owns a freshly set-up site (the `configure_site` step). */
export interface DriverOwner {
  name: string;
  email: string;
  title: string;
}

/** Where a workload keeps its data on the node (what backups capture and restore). */
export interface DriverLayout {
  /** The directory of its files (content, uploads). */
  content: string;
  /** Its database file, when it keeps one (SQLite); absent for a runtime without one. */
  database?: string;
  /** Directories under `content` whose files a backup leaves out and a restore makes again empty (logs). */
  transient?: string[];
}

/** A SQL session on a stopped workload's database (its file, or its MySQL database): statements with bound parameters. */
export interface DriverSql {
  run(sql: string, ...p: unknown[]): Promise<void>;
  get<R>(sql: string, ...p: unknown[]): Promise<R | undefined>;
}

export interface RuntimeDriver {
  /** The runtime's name in the catalog's specs (`RuntimeSpec.name`), e.g. `ghost`. */
  readonly name: string;
  /** Installs the release; default: the runtime cache (an npm package checked against its integrity). */
  install?(spec: RuntimeSpec, cache: RuntimeCache, onProgress?: ProgressFn): Promise<InstalledRuntime>;
  /** Prepares the workload's files and answers how the supervisor runs it (everything but its id). */
  workload(w: DriverWorkload): Promise<Omit<WorkloadSpec, 'id'>>;
  /**
   * One probe of a running workload: answers the version it reports once it serves, or null while it
   * does not yet (the host calls it again until its deadline); a throw counts as "not yet" too, its
   * message the reason shown if the deadline passes.
   */
  probe(at: DriverEndpoint, w: DriverWorkload, timeoutMs?: number): Promise<string | null>;
  /** The first set-up of a fresh workload (an owner, the platform's access); answers what the platform keeps. */
  configure?(at: DriverEndpoint, w: DriverWorkload, owner: DriverOwner): Promise<Record<string, string>>;
  /** Where the workload's data lives under its directory. */
  layout(dir: string): DriverLayout;
  /**
   * A copy of a workload made from another's data (a staging copy restored from its source's
   * recovery point) gets access of its own (docs/decisions/0360-data-steps-on-the-node.md): the
   * platform's access in the copied database (`integrationId`, as `configure` answered it) gets new
   * keys and the copied sessions go. Answers the new access as `configure` does (`admin_api_key`).
   */
  rekey?(db: DriverSql, access: { integrationId: string }): Promise<Record<string, string>>;
  /**
   * A `NAME=value` entry of the environment of the workload kept in `dir` that no other workload
   * has: how the host finds a process of it that a killed platform process left running (Linux
   * `/proc/<pid>/environ`). A runtime without one leaves no process behind (its launcher watches
   * the platform and ends with it).
   */
  marker?(dir: string): string;
}

/**
 * The first of `entries` that exists but is not what it should be (a plain directory or file; a link
 * never is), relative to the workload's directory; null when all are (or are absent). The workload's
 * uid owns these paths (docs/decisions/0273-tenant-sandbox.md) and the platform works on them as
 * root, so it never follows a link planted there.
 */
export async function notPlain(
  dir: string,
  entries: ReadonlyArray<readonly [string, 'dir' | 'file']>,
): Promise<{ rel: string; what: 'directory' | 'file' } | null> {
  for (const [p, kind] of entries) {
    const st = await lstat(p).catch(() => null);
    if (st && (kind === 'dir' ? !st.isDirectory() : !st.isFile()))
      return { rel: path.relative(dir, p), what: kind === 'dir' ? 'directory' : 'file' };
  }
  return null;
}

/** The drivers a node runs, by runtime name. */
export class RuntimeDrivers {
  private readonly byName = new Map<string, RuntimeDriver>();

  constructor(drivers: Iterable<RuntimeDriver>) {
    for (const d of drivers) this.add(d);
  }

  add(driver: RuntimeDriver): void {
    if (this.byName.has(driver.name)) throw new Error(`a driver for runtime ${driver.name} is registered already`);
    this.byName.set(driver.name, driver);
  }

  all(): RuntimeDriver[] {
    return [...this.byName.values()];
  }

  get(name: string): RuntimeDriver {
    const d = this.byName.get(name);
    if (!d) throw new Error(`this node has no driver for runtime ${name} (it runs ${[...this.byName.keys()].join(', ')})`);
    return d;
  }
}

/** How long the probe loop waits between probes: tight while a workload usually comes up, then easier. */
export function probeDelayMs(elapsedMs: number): number {
  return elapsedMs < 10_000 ? 50 : 250;
}

export type ProbeOutcome = { ok: true; version: string; ms: number } | { ok: false; last: string; ms: number };

/**
 * Probes a workload with its driver until it answers, the caller gives up on it, or the deadline
 * passes (the site host's health wait and the release host's gate). `at` answers where to probe now,
 * or null while there is nothing to probe yet (not spawned); `gaveUp` answers why to stop early
 * (the supervisor gave up on a crashing process), or null.
 */
export async function probeUntil(
  driver: RuntimeDriver,
  w: DriverWorkload,
  o: { at: () => DriverEndpoint | null; deadline: number; gaveUp?: () => string | null },
): Promise<ProbeOutcome> {
  const t0 = Date.now();
  let last = 'no answer';
  for (;;) {
    const stop = o.gaveUp?.();
    if (stop) return { ok: false, last: stop, ms: Date.now() - t0 };
    const at = o.at();
    if (at) {
      try {
        const timeoutMs = Math.max(1, Math.min(5_000, o.deadline - Date.now()));
        const version = await driver.probe(at, w, timeoutMs);
        if (version !== null) return { ok: true, version, ms: Date.now() - t0 };
        last = 'not serving yet';
      } catch (e) {
        last = (e as Error).message;
      }
    }
    const delay = probeDelayMs(Date.now() - t0);
    if (Date.now() + delay >= o.deadline) return { ok: false, last, ms: Date.now() - t0 };
    await new Promise((r) => setTimeout(r, delay));
  }
}
