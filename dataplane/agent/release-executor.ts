import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { type ReleaseHost, type ReleaseRun, reconcileReleases } from '../releases';
import { bundleKind } from '../workerd';
import { StepFailure } from './executors';
import { type AgentRelease, type AgentReleaseTask, BUNDLE_KIND_MISMATCH, type ReleaseDelivery } from './wire';

const run = promisify(execFile);

/**
 * Where a node gets a release's bundle and process environment (docs/decisions/0325-nodes-module.md,
 * 0365-agent-fetches-extras-and-releases.md): from the platform over the agent protocol, for a release
 * named by a task this node holds (`agentReleaseSource`). Neither goes into the task record.
 */
export interface ReleaseSource {
  /** Puts the release's bundle, unpacked, into `dir` and answers how to run it. */
  prepare(taskId: string, release: AgentRelease, dir: string): Promise<ReleaseRun>;
  /** Right before a reconcile starts a release: whether the platform still wants it where the task said. */
  stillWanted(taskId: string, release: AgentRelease): Promise<boolean>;
}

/** The agent's calls a release source uses: one JSON answer, one download of bytes into a file. */
export interface ReleaseCalls {
  get<T>(path: string): Promise<T>;
  download(path: string, file: string): Promise<void>;
}

const kindName = (k: string) => (k === 'app' ? 'an app' : 'a storefront');

/**
 * The release source over the agent protocol: the release's run (environment, kind, gate) and its
 * bundle's bytes, downloaded next to `dir`, checked against the SHA-256 the platform named (the bytes
 * of the artifact it validated at upload: files and directories, relative paths only), unpacked, and
 * its kind checked against the connection's.
 */
export function agentReleaseSource(calls: ReleaseCalls): ReleaseSource {
  const base = (taskId: string, releaseId: string) =>
    `/tasks/${encodeURIComponent(taskId)}/releases/${encodeURIComponent(releaseId)}`;
  return {
    async prepare(taskId, release, dir) {
      const p = base(taskId, release.releaseId);
      const { run: wanted, sha256 } = await calls.get<ReleaseDelivery>(p);
      await rm(dir, { recursive: true, force: true });
      await mkdir(dir, { recursive: true });
      // Beside `dir`, not in it: tar stops at the end-of-archive marker, so the file is whole first.
      const archive = `${dir}.${process.pid}.tar`;
      try {
        await calls.download(`${p}/bundle`, archive);
        const hash = createHash('sha256');
        for await (const chunk of createReadStream(archive)) hash.update(chunk as Buffer);
        const got = hash.digest('hex');
        if (got !== sha256)
          throw new StepFailure('bundle_download_failed', `the bundle's bytes hash to ${got}, not ${sha256}`, true);
        await run('tar', ['--no-same-owner', '-xf', archive, '-C', dir]);
      } finally {
        await rm(archive, { force: true });
      }
      const kind = bundleKind(dir);
      if (kind !== wanted.kind) {
        throw new StepFailure(
          BUNDLE_KIND_MISMATCH,
          kind
            ? `the bundle is ${kindName(kind)}, the connection ${kindName(wanted.kind)}`
            : 'the bundle holds neither index.js, dist/server/index.js nor server.mjs',
        );
      }
      return wanted;
    },
    async stillWanted(taskId, release) {
      return (await calls.get<{ wanted: boolean }>(`${base(taskId, release.releaseId)}/wanted`)).wanted;
    },
  };
}

/** A failure of the call rather than an answer: the network, or the platform busy (see NodeAgent's `call`). */
function transient(e: unknown): boolean {
  if (e instanceof StepFailure) return e.retriable;
  const status = (e as { status?: unknown }).status;
  return typeof status !== 'number' || status >= 500 || status === 429;
}

/** A failure with the area's own code (a bundle of the wrong kind) keeps it across the protocol. */
async function guard<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (e instanceof StepFailure || typeof code !== 'string') throw e;
    throw new StepFailure(code, (e as Error).message, (e as { retriable?: boolean }).retriable === true);
  }
}

/**
 * Commerce releases on the node's data plane: each release task starts a bundle through the release
 * host's health gate (dataplane/releases.ts, the storefront and app drivers), switches a project's
 * production address or brings the releases that should run back (the reconcile pass). The host's
 * observations (requests served, the degraded rule) go where its options say.
 */
export class ReleaseExecutor {
  constructor(
    readonly host: ReleaseHost,
    private readonly source: ReleaseSource,
  ) {}

  async run(task: AgentReleaseTask): Promise<Record<string, unknown> | null> {
    const work = task.release;
    const [r] = work.releases;
    switch (task.step) {
      case 'release_start': {
        // Starting from the first moment of the unpacking: a reconcile neither prunes nor starts it meanwhile.
        const g = await guard(() => this.host.start(() => this.prepare(task.id, r), r.releaseId));
        if (!g.healthy) return { healthy: false, ms: g.ms, last: g.last, promoted: false };
        this.host.markHealthy(r.releaseId);
        const promoted = r.production || this.host.productionOf(r.projectId) === r.releaseId;
        if (promoted) this.host.promote(r.projectId, r.releaseId);
        for (const older of work.supersede ?? []) {
          if (this.host.running(older) && this.host.productionOf(r.projectId) !== older) await this.host.stop(older);
        }
        return { healthy: true, ms: g.ms, last: null, promoted };
      }
      case 'release_promote': {
        // A healthy release stopped since (superseded, a restart) is started again first.
        if (!this.host.running(r.releaseId)) {
          const g = await guard(() => this.host.start(() => this.prepare(task.id, r), r.releaseId));
          if (!g.healthy) return { healthy: false, ms: g.ms, last: g.last };
          this.host.markHealthy(r.releaseId);
        }
        this.host.promote(r.projectId, r.releaseId);
        return { healthy: true, last: null };
      }
      case 'release_reconcile': {
        // A bundle or an answer that did not come (the network, the platform busy: no status, 5xx,
        // 429) is no failed release: the next pass (30 s) tries again. A refusal (a release or
        // artifact gone) or a bundle of the wrong kind is one.
        const later = new Set<string>();
        const unlessLater = <T>(id: string, fn: () => Promise<T>) =>
          fn().catch((e: unknown) => {
            if (transient(e)) later.add(id);
            throw e;
          });
        const out = await reconcileReleases(
          this.host,
          work.releases.map((w) => ({
            releaseId: w.releaseId,
            productionOf: w.production ? w.projectId : null,
            healthy: w.healthy,
            prepare: () => unlessLater(w.releaseId, () => this.prepare(task.id, w)),
            stillWanted: () => unlessLater(w.releaseId, () => this.source.stillWanted(task.id, w)),
          })),
          new Set(work.keep ?? []),
        );
        return { started: out.started, failed: out.failed.filter((f) => !later.has(f.releaseId)) };
      }
      default:
        throw new StepFailure('unknown_step', `the node agent has no release step ${task.step}`);
    }
  }

  private prepare(taskId: string, r: AgentRelease): Promise<ReleaseRun> {
    return this.source.prepare(taskId, r, path.join(this.host.releaseDir(r.releaseId), 'bundle'));
  }

  close(): Promise<void> {
    return this.host.close();
  }
}
