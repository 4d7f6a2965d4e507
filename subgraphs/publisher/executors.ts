import { randomBytes } from 'node:crypto';
import { PlatformError } from '../../core/errors';
import {
  LeaseLostError,
  WorkerShutdownError,
  errorCodeOf,
  willRetry,
  type OperationContext,
  type OperationEngine,
  type OperationExecutor,
} from '../../core/operations/engine';
import { fencedUpdate, takeResourceFence } from '../../core/operations/fencing';
import type { CaptureDoc, PublisherModels, SiteDoc, StoredSiteStatus } from './model';
import { findRuntime } from './runtime-catalog';
import type { Infrastructure } from './simulated-infrastructure';

/** The steps each plain site operation walks through, in order, and the state it leaves the site in. */
export const SITE_OPERATION_STEPS: Record<string, { steps: string[]; leaves: StoredSiteStatus }> = {
  provision: {
    steps: ['allocate_database', 'create_volume', 'pull_image', 'start_runtime', 'configure_site', 'health_check'],
    leaves: 'running',
  },
  restart: { steps: ['stop_runtime', 'start_runtime', 'health_check'], leaves: 'running' },
  stop: { steps: ['drain_traffic', 'stop_runtime'], leaves: 'stopped' },
  start: { steps: ['start_runtime', 'health_check'], leaves: 'running' },
  // The site's process, routes, port and files go; the record stays as a tombstone (404 to reads).
  delete: { steps: ['drain_traffic', 'stop_runtime', 'delete_site'], leaves: 'deleted' },
};

/** The three parts of a recovery point, each captured by its own step, then sealed as one record. */
export const CAPTURE_STEPS = [
  ['capture_database', 'database'],
  ['capture_content', 'content'],
  ['capture_release', 'release'],
] as const;
export const SEAL_STEP = 'seal_recovery_point';
export const RESTORE_STEPS = [
  'stop_runtime',
  'restore_database',
  'restore_content',
  'pin_release',
  'start_runtime',
  'health_check',
];
export const UPGRADE_STEPS = ['pull_image', 'stop_runtime', 'migrate_database', 'start_runtime', 'health_check'];
export const ROLLBACK_STEP = 'rollback';
export const STAGING_COPY_STEPS = [
  'allocate_database',
  'create_volume',
  'restore_database',
  'restore_content',
  'pull_image',
  'start_runtime',
  'configure_site',
  'health_check',
];

export interface RecoveryPointInput {
  recoveryPointId: string;
}
export interface UpgradeInput extends RecoveryPointInput {
  fromVersion: string;
  targetVersion: string;
}
export interface StagingInput extends RecoveryPointInput {
  sourceProjectId: string;
  stagingProjectId: string;
}

export interface SiteExecutorDeps {
  engine: OperationEngine;
  models: PublisherModels;
  infra: Infrastructure;
}

/**
 * True when the engine will not run this operation again after `e`: the same rule the engine
 * applies (non-retriable, or out of attempts). A lost lease or a shutdown is never final: another
 * worker resumes the operation.
 */
export function isFinalFailure(ctx: Pick<OperationContext, 'op' | 'signal'>, e: unknown): boolean {
  if (ctx.signal.aborted || e instanceof LeaseLostError || e instanceof WorkerShutdownError) return false;
  return !willRetry(ctx.op, e);
}

/** Registers the simulated executors of every site lifecycle operation on the engine. */
export function siteExecutors(deps: SiteExecutorDeps): Record<string, OperationExecutor> {
  const d = deps;
  const executors: Record<string, OperationExecutor> = {};
  for (const [operationType, plan] of Object.entries(SITE_OPERATION_STEPS)) {
    executors[operationType] = async (ctx) => {
      try {
        await runSteps(ctx, d, plan.steps, ctx.op.resourceId, () => ({ status: plan.leaves }));
      } catch (e) {
        // A provisioning that failed for good gives its hosted-site slot back (retry_provisioning takes it again).
        if (operationType === 'provision' && isFinalFailure(ctx, e)) await releaseSlot(d, ctx.op.accountId, ctx.op.resourceId);
        throw e;
      }
      // A deleted site gives its hosted-site slot back.
      if (operationType === 'delete') await releaseSlot(d, ctx.op.accountId, ctx.op.resourceId);
      return { siteStatus: plan.leaves };
    };
  }
  executors.recovery_point = async (ctx) => {
    const { recoveryPointId } = ctx.op.input as RecoveryPointInput;
    await capture(ctx, d, recoveryPointId, ctx.op.resourceId);
    return { recovery_point_id: recoveryPointId, recovery_point_status: 'completed' };
  };
  executors.restore = (ctx) => restore(ctx, d);
  executors.upgrade = (ctx) => upgrade(ctx, d);
  executors.staging = (ctx) => staging(ctx, d);
  return executors;
}

/**
 * Runs simulated steps in order; the last one also writes `finalState()` to the site, fenced on
 * the lock: only the operation holding the site may set its state.
 */
async function runSteps(
  ctx: OperationContext,
  d: SiteExecutorDeps,
  steps: string[],
  siteId: string,
  finalState: () => Partial<SiteDoc>,
  before?: (step: string) => void,
): Promise<void> {
  const last = steps[steps.length - 1];
  // Stamp the site with this attempt's lease token first: a worker whose lease was taken over
  // can no longer change it (core/operations/fencing.ts).
  await takeResourceFence(d.models.Site, siteId, ctx.op);
  for (const step of steps) {
    before?.(step);
    await ctx.step(
      step,
      async (s) => {
        await d.infra.perform(ctx.op.operationType, step, s.signal, ctx.op, s.idempotencyToken, {
          siteId,
          progress: (line) => void s.progress(line).catch(() => undefined),
        });
        if (step === last) await setSite(d, siteId, ctx, finalState());
        return null;
      },
      { timeoutMs: d.infra.stepTimeoutMs?.(step) },
    );
  }
}

/** Gives back the hosted-site slot `siteId` holds, if any (idempotent: the quota lists its holders). */
async function releaseSlot(d: SiteExecutorDeps, accountId: string, siteId: string): Promise<void> {
  await d.models.SiteQuota.updateOne(
    { _id: accountId, holders: siteId },
    { $inc: { hostedSites: -1 }, $pull: { holders: siteId } },
  );
}

/** Writes the site's state, fenced: only the current attempt of the operation holding the site may. */
async function setSite(d: SiteExecutorDeps, siteId: string, ctx: OperationContext, fields: Partial<SiteDoc>) {
  await takeResourceFence(d.models.Site, siteId, ctx.op);
  await fencedUpdate(d.models.Site, siteId, ctx.op, { $set: { ...fields, updatedAt: new Date() } });
}

/** Simulated snapshot of one part; sizes are plausible, not meaningful. */
function snapshot(part: 'database' | 'content', pointId: string): CaptureDoc {
  const mb = part === 'database' ? 40 + randomBytes(1)[0] : 200 + (randomBytes(2).readUInt16BE() % 800);
  return {
    status: 'captured',
    snapshotId: `${part === 'database' ? 'dbsnap' : 'volsnap'}-${pointId.slice(0, 8)}-${randomBytes(4).toString('hex')}`,
    sizeBytes: mb * 1024 * 1024,
    capturedAt: new Date(),
  };
}

/**
 * Captures database, content and runtime release of `siteId` into the point, one step each, then
 * seals it `completed`. A final failure of any part leaves it `incomplete` (the failed part
 * `failed`, the rest `skipped`) and fails the operation; it never becomes completed afterwards.
 */
async function capture(ctx: OperationContext, d: SiteExecutorDeps, pointId: string, siteId: string): Promise<void> {
  const RP = d.models.RecoveryPoint;
  for (const [step, part] of CAPTURE_STEPS) {
    try {
      await ctx.step(step, async (s) => {
        const out = await d.infra.perform(ctx.op.operationType, step, s.signal, ctx.op, s.idempotencyToken, { siteId });
        const real = out?.captured ? { status: 'captured', ...out.captured, capturedAt: new Date() } : null;
        let set: Record<string, unknown>;
        if (part === 'release') {
          const site = await d.models.Site.findById(siteId).lean();
          const runtime = site ? findRuntime(site.runtimeVersion) : undefined;
          if (!site || !runtime)
            throw new PlatformError('release_unknown', 500, 'the running release is not in the runtime catalog');
          set = {
            runtimeVersion: runtime.version,
            runtimeDigest: runtime.digest,
            runtimeImage: runtime.image,
            release: real ?? { status: 'captured', snapshotId: runtime.digest, sizeBytes: null, capturedAt: new Date() },
          };
        } else set = { [part]: real ?? snapshot(part, pointId) };
        await RP.updateOne({ _id: pointId, status: 'pending' }, { $set: set });
        return { part };
      });
    } catch (e) {
      if (isFinalFailure(ctx, e)) await markIncomplete(d, pointId, part, errorCodeOf(e));
      throw e;
    }
  }
  await ctx.step(SEAL_STEP, async () => {
    const sealed = await RP.updateOne(
      { _id: pointId, status: 'pending' },
      { $set: { status: 'completed', completedAt: new Date() } },
    );
    if (sealed.matchedCount === 1) return { status: 'completed' };
    const point = await RP.findById(pointId).lean();
    if (point?.status === 'completed') return { status: 'completed' };
    throw new PlatformError('recovery_point_incomplete', 500, 'the recovery point was marked incomplete and cannot be sealed');
  });
}

async function markIncomplete(d: SiteExecutorDeps, pointId: string, failedPart: string, code: string): Promise<void> {
  const point = await d.models.RecoveryPoint.findById(pointId).lean();
  if (!point || point.status !== 'pending') return;
  const set: Record<string, unknown> = { status: 'incomplete', errorCode: code };
  for (const [, part] of CAPTURE_STEPS) {
    if (part === failedPart) set[`${part}.status`] = 'failed';
    else if (point[part].status === 'pending') set[`${part}.status`] = 'skipped';
  }
  await d.models.RecoveryPoint.updateOne({ _id: pointId, status: 'pending' }, { $set: set });
}

/** Brings the site back to a completed point: its database, content and exact runtime release. */
async function restore(ctx: OperationContext, d: SiteExecutorDeps): Promise<unknown> {
  const { recoveryPointId } = ctx.op.input as RecoveryPointInput;
  const point = await d.models.RecoveryPoint.findById(recoveryPointId).lean();
  if (!point || point.status !== 'completed') {
    throw new PlatformError('recovery_point_incomplete', 400, 'only a completed recovery point can be restored');
  }
  await runSteps(ctx, d, RESTORE_STEPS, ctx.op.resourceId, () => ({ status: 'running', runtimeVersion: point.runtimeVersion }));
  return { recovery_point_id: point._id, runtime_version: point.runtimeVersion, runtime_digest: point.runtimeDigest };
}

/**
 * Captures the pre-upgrade point, then upgrades. When an upgrade step fails for good, a `rollback`
 * step brings the site back to that point (its version never changed: the new version is written
 * only by the last step), the operation's `result` says so, and the operation fails with
 * `upgrade_failed`.
 */
async function upgrade(ctx: OperationContext, d: SiteExecutorDeps): Promise<unknown> {
  const input = ctx.op.input as UpgradeInput;
  const siteId = ctx.op.resourceId;
  await capture(ctx, d, input.recoveryPointId, siteId);
  const summary = {
    recovery_point_id: input.recoveryPointId,
    from_version: input.fromVersion,
    target_version: input.targetVersion,
  };
  // A rollback once started is finished, even by a worker that resumes the operation.
  let failedStep = ctx.op.steps.find((s) => s.id === ROLLBACK_STEP) ? lastFailedUpgradeStep(ctx) : null;
  let cause = ctx.op.errorCode ?? 'upgrade_step_failed';
  if (!failedStep) {
    let current = UPGRADE_STEPS[0];
    try {
      await runSteps(
        ctx,
        d,
        UPGRADE_STEPS,
        siteId,
        () => ({ status: 'running', runtimeVersion: input.targetVersion }),
        (s) => (current = s),
      );
      return { ...summary, runtime_version: input.targetVersion, rolled_back: false };
    } catch (e) {
      if (!isFinalFailure(ctx, e)) throw e;
      failedStep = current;
      cause = errorCodeOf(e);
    }
  }
  const writeResult = (result: Record<string, unknown>) =>
    d.engine.store.write({ id: ctx.op._id, owner: ctx.op.lease.owner ?? '', token: ctx.op.lease.token }, { $set: { result } });
  try {
    await ctx.step(ROLLBACK_STEP, async (s) => {
      await d.infra.perform(ctx.op.operationType, ROLLBACK_STEP, s.signal, ctx.op, s.idempotencyToken, { siteId });
      await setSite(d, siteId, ctx, { status: 'running', runtimeVersion: input.fromVersion });
      return { restored_recovery_point_id: input.recoveryPointId, runtime_version: input.fromVersion };
    });
  } catch (e) {
    if (isFinalFailure(ctx, e)) {
      await writeResult({ ...summary, runtime_version: input.fromVersion, rolled_back: false, failed_step: failedStep });
      throw new PlatformError(
        'rollback_failed',
        500,
        `upgrade failed in step ${failedStep} and the rollback failed too (${errorCodeOf(e)})`,
      );
    }
    throw e;
  }
  await writeResult({
    ...summary,
    runtime_version: input.fromVersion,
    rolled_back: true,
    failed_step: failedStep,
    cause_code: cause,
  });
  throw new PlatformError(
    'upgrade_failed',
    500,
    `upgrade to ${input.targetVersion} failed in step ${failedStep} (${cause}); rolled back to recovery point ${input.recoveryPointId}, the site stays on ${input.fromVersion}`,
  );
}

function lastFailedUpgradeStep(ctx: OperationContext): string {
  const failed = ctx.op.steps.filter((s) => UPGRADE_STEPS.includes(s.id) && s.status === 'failed');
  return failed[failed.length - 1]?.id ?? 'unknown';
}

/** Captures the source site into a fresh point, then builds the staging site from it. */
async function staging(ctx: OperationContext, d: SiteExecutorDeps): Promise<unknown> {
  const input = ctx.op.input as StagingInput;
  await capture(ctx, d, input.recoveryPointId, input.sourceProjectId);
  const point = await d.models.RecoveryPoint.findById(input.recoveryPointId).lean();
  const runtimeVersion = point!.runtimeVersion;
  await runSteps(ctx, d, STAGING_COPY_STEPS, input.stagingProjectId, () => ({ status: 'running', runtimeVersion }));
  return {
    staging_project_id: input.stagingProjectId,
    source_recovery_point_id: input.recoveryPointId,
    runtime_version: runtimeVersion,
  };
}
