import { conflict } from '../../core/errors';
import type { OperationEngine } from '../../core/operations/engine';
import type { OperationDoc } from '../../core/operations/model';
import type { PublisherModels, SiteDoc } from './model';

/** What users see of a site's state: the stored state, corrected by a failed active operation. */
export type SiteStatus = 'provisioning' | 'running' | 'stopped' | 'provision_failed';

/** Lifecycle requests: the four actions and the operations of recovery, staging and upgrade. */
export type LifecycleRequest =
  'restart' | 'start' | 'stop' | 'retry_provisioning' | 'recovery_point' | 'restore' | 'staging' | 'upgrade';

/** Where each lifecycle request is allowed (a second request while one runs gets 409 first). */
export const ALLOWED_IN: Record<LifecycleRequest, SiteStatus[]> = {
  restart: ['running'],
  stop: ['running'],
  start: ['stopped'],
  retry_provisioning: ['provision_failed'],
  recovery_point: ['running', 'stopped'],
  restore: ['running', 'stopped'],
  staging: ['running', 'stopped'],
  upgrade: ['running'],
};

const TERMINAL = new Set(['completed', 'failed']);
export const isRunning = (op: OperationDoc | null): op is OperationDoc => Boolean(op && !TERMINAL.has(op.status));

/**
 * The per-site lifecycle lock: `activeOperationId` names the operation holding the site, taken by
 * a compare-and-swap on the holder that was read. A terminal or missing holder frees the lock, so
 * nothing ever has to release it — an operation ending is the release.
 */
export class SiteLocks {
  constructor(
    private readonly models: PublisherModels,
    private readonly engine: OperationEngine,
  ) {}

  /** The site's state as users see it; a site still provisioning whose operation failed is `provision_failed`. */
  async state(site: SiteDoc): Promise<{ status: SiteStatus; activeOperation: OperationDoc | null }> {
    const activeOperation = site.activeOperationId ? await this.engine.get(site.activeOperationId) : null;
    const failedProvision = site.status === 'provisioning' && (!activeOperation || activeOperation.status === 'failed');
    return { status: failedProvision ? 'provision_failed' : site.status, activeOperation };
  }

  /**
   * Checks that `what` may start on the site now and takes its lock for `operationId`.
   * A running operation → 409 `operation_in_progress`; a wrong state → 409 `invalid_site_state`.
   * Returns the lock's previous holder (to give the lock back if the request goes no further).
   */
  async begin(site: SiteDoc, what: LifecycleRequest, operationId: string): Promise<string | null> {
    const { status, activeOperation } = await this.state(site);
    if (isRunning(activeOperation)) throw busy(activeOperation);
    if (!ALLOWED_IN[what].includes(status)) {
      throw conflict('invalid_site_state', `cannot ${what.replace('_', ' ')} a site that is ${status.replace('_', ' ')}`, {
        action: what,
        site_status: status,
      });
    }
    const taken = await this.models.Site.findOneAndUpdate(
      { _id: site._id, activeOperationId: site.activeOperationId },
      { $set: { activeOperationId: operationId, updatedAt: new Date() } },
    );
    if (!taken) {
      const fresh = await this.models.Site.findById(site._id).lean();
      throw busy(fresh?.activeOperationId ? await this.engine.get(fresh.activeOperationId) : null);
    }
    return site.activeOperationId;
  }

  /** Runs `fn` holding the lock; if it throws before the operation exists, gives the lock back. */
  async withLock<T>(site: SiteDoc, operationId: string, previous: string | null, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (!(await this.engine.get(operationId))) {
        await this.models.Site.updateOne(
          { _id: site._id, activeOperationId: operationId },
          { $set: { activeOperationId: previous } },
        );
      }
      throw e;
    }
  }
}

function busy(holder: OperationDoc | null) {
  return conflict('operation_in_progress', 'another lifecycle operation is running on this site', {
    operation_id: holder?._id ?? null,
    operation_type: holder?.operationType ?? null,
  });
}
