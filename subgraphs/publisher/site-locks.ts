import { conflict } from '../../core/errors';
import { type OperationEngine, VOID_OPERATION } from '../../core/operations/engine';
import type { OperationDoc } from '../../core/operations/model';
import type { PublisherModels, SiteDoc } from './model';
import { SettledOperations } from './settled-operations';

/** What users see of a site's state: the stored state, corrected by a failed active operation. */
export type SiteStatus = 'provisioning' | 'running' | 'stopped' | 'provision_failed' | 'deleted';

/** Lifecycle requests: the four actions and the operations of recovery, staging and upgrade. */
export type LifecycleRequest =
  'restart' | 'start' | 'stop' | 'retry_provisioning' | 'delete' | 'recovery_point' | 'restore' | 'staging' | 'upgrade';

/** Where each lifecycle request is allowed (a second request while one runs gets 409 first). */
export const ALLOWED_IN: Record<LifecycleRequest, SiteStatus[]> = {
  restart: ['running'],
  stop: ['running'],
  start: ['stopped'],
  retry_provisioning: ['provision_failed'],
  delete: ['running', 'stopped', 'provision_failed'],
  recovery_point: ['running', 'stopped'],
  restore: ['running', 'stopped'],
  staging: ['running', 'stopped'],
  upgrade: ['running'],
};

const TERMINAL = new Set(['completed', 'failed']);
export const isRunning = (op: OperationDoc | null): op is OperationDoc => Boolean(op && !TERMINAL.has(op.status));

/**
 * The per-site lifecycle lock: `activeOperationId` names the operation holding the site, taken by
 * a compare-and-swap on the holder and the site status that were read. A terminal holder frees
 * the lock, so nothing ever has to release it — an operation ending is the release.
 *
 * A lock is taken before its operation is enqueued (the id is chosen first). A holder that does
 * not exist yet may be about to, or its request died in between: no clock can tell. A lifecycle
 * request that finds such a holder writes a tombstone under its id (`engine.getOrVoid`): one
 * unique insert decides, so either the operation exists and holds the site, or it never will and
 * the lock is free. Reads never write: they show such a site as busy.
 */
export class SiteLocks {
  /** The holder's reads: a finished holder is read once per process (settled-operations.ts). */
  private readonly holders: SettledOperations;

  constructor(
    private readonly models: PublisherModels,
    private readonly engine: OperationEngine,
  ) {
    this.holders = new SettledOperations(engine);
  }

  /** The site's state as users see it; a site still provisioning whose operation failed is `provision_failed`. */
  async state(
    site: SiteDoc,
    settle = false,
  ): Promise<{ status: SiteStatus; activeOperation: OperationDoc | null; enqueuing: boolean }> {
    const id = site.activeOperationId;
    let activeOperation = id ? await this.holders.get(id) : null;
    if (id && !activeOperation && settle) {
      activeOperation = await this.engine.getOrVoid(id, { accountId: site.accountId, projectId: site._id, resourceId: site._id });
      this.holders.keep(activeOperation);
    }
    const enqueuing = !activeOperation && id !== null;
    const failedProvision =
      site.status === 'provisioning' && !enqueuing && (!activeOperation || activeOperation.status === 'failed');
    return { status: failedProvision ? 'provision_failed' : site.status, activeOperation, enqueuing };
  }

  /**
   * Checks that `what` may start on the site now and takes its lock for `operationId`.
   * A running operation → 409 `operation_in_progress`; a wrong state → 409 `invalid_site_state`.
   * Returns the lock's previous holder (to give the lock back if the request goes no further).
   */
  async begin(site: SiteDoc, what: LifecycleRequest, operationId: string): Promise<string | null> {
    const { status, activeOperation, enqueuing } = await this.state(site, true);
    if (isRunning(activeOperation)) throw busy(activeOperation);
    if (enqueuing) throw busy(null, site.activeOperationId);
    if (!ALLOWED_IN[what].includes(status)) {
      throw conflict('invalid_site_state', `cannot ${what.replace('_', ' ')} a site that is ${status.replace('_', ' ')}`, {
        action: what,
        site_status: status,
      });
    }
    // The site's status is part of the condition: a site that changed state since it was read
    // (an operation finished and wrote it) is judged again, not locked on a stale reading.
    const taken = await this.models.Site.findOneAndUpdate(
      { _id: site._id, activeOperationId: site.activeOperationId, status: site.status },
      { $set: { activeOperationId: operationId, activeOperationAt: new Date(), updatedAt: new Date() } },
    );
    if (!taken) {
      const fresh = await this.models.Site.findById(site._id).lean();
      const holder = fresh?.activeOperationId ?? null;
      throw busy(holder ? await this.engine.get(holder) : null, holder);
    }
    return site.activeOperationId;
  }

  /**
   * Runs `fn` holding the lock; if it throws before the operation exists, gives the lock back. A
   * concurrent request that found the lock taken and its operation not yet there voided it (a
   * tombstone under its id: `state`); this request's enqueue then fails, and it answers as any other
   * request that lost the race: 409 `operation_in_progress`, naming the site's holder now.
   */
  async withLock<T>(site: SiteDoc, operationId: string, previous: string | null, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      const own = await this.engine.get(operationId);
      if (!own) {
        await this.models.Site.updateOne(
          { _id: site._id, activeOperationId: operationId },
          { $set: { activeOperationId: previous, activeOperationAt: null } },
        );
      } else if (own.operationType === VOID_OPERATION && (e as { code?: string }).code === 'operation_id_conflict') {
        const holder = (await this.models.Site.findById(site._id).lean())?.activeOperationId ?? null;
        throw busy(holder ? await this.engine.get(holder) : null, holder);
      }
      throw e;
    }
  }
}

function busy(holder: OperationDoc | null, holderId: string | null = null) {
  return conflict('operation_in_progress', 'another lifecycle operation is running on this site', {
    operation_id: holder?._id ?? holderId,
    operation_type: holder?.operationType ?? null,
  });
}
