import path from 'node:path';
import { type ReleaseHost, type ReleaseRun, reconcileReleases } from '../releases';
import { StepFailure } from './executors';
import type { AgentRelease, AgentReleaseTask } from './wire';

/**
 * Where a node gets a release's bundle and process environment (docs/decisions/0325-nodes-module.md):
 * the platform's commerce area, in process, for the hosted node (the bundle is in its blob store and
 * the environment's secrets are sealed with its key; neither goes into the task record).
 */
export interface ReleaseSource {
  /** Unpacks the release's bundle into `dir` and answers how to run it. */
  prepare(releaseId: string, dir: string): Promise<ReleaseRun>;
  /** Right before a reconcile starts a release: whether the platform still wants it where the task said. */
  stillWanted?(release: AgentRelease): Promise<boolean>;
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
        const g = await guard(() => this.host.start(() => this.prepare(r), r.releaseId));
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
          const g = await guard(() => this.host.start(() => this.prepare(r), r.releaseId));
          if (!g.healthy) return { healthy: false, ms: g.ms, last: g.last };
          this.host.markHealthy(r.releaseId);
        }
        this.host.promote(r.projectId, r.releaseId);
        return { healthy: true, last: null };
      }
      case 'release_reconcile': {
        const out = await reconcileReleases(
          this.host,
          work.releases.map((w) => ({
            releaseId: w.releaseId,
            productionOf: w.production ? w.projectId : null,
            healthy: w.healthy,
            prepare: () => this.prepare(w),
            ...(this.source.stillWanted ? { stillWanted: () => this.source.stillWanted!(w) } : {}),
          })),
          new Set(work.keep ?? []),
        );
        return { started: out.started, failed: out.failed };
      }
      default:
        throw new StepFailure('unknown_step', `the node agent has no release step ${task.step}`);
    }
  }

  private prepare(r: AgentRelease): Promise<ReleaseRun> {
    return this.source.prepare(r.releaseId, path.join(this.host.releaseDir(r.releaseId), 'bundle'));
  }

  close(): Promise<void> {
    return this.host.close();
  }
}
