import { randomUUID } from 'node:crypto';
import { badRequest, conflict, notFound } from '../../core/errors';
import { isUuid } from '../../core/ids';
import type { OperationEngine } from '../../core/operations/engine';
import type { OperationDoc } from '../../core/operations/model';
import type { Principal } from '../../core/principal';
import type { StagingInput, UpgradeInput } from './executors';
import { MAX_REASON_LENGTH, MAX_SITE_NAME_LENGTH } from './limits';
import { type PublisherModels, type RecoveryPointDoc, type RecoveryPointKind, type SiteDoc, pendingCapture } from './model';
import { RECOVERY_POINT_LIST_LIMIT, type RecoveryPointView, recoveryPointView, recoveryPointViews } from './recovery-points';
import { RUNTIME_CATALOG, defaultRuntime, findRuntime, isUpgradeEdge, upgradeTargets } from './runtime-catalog';
import type { SiteAccess } from './site-access';
import { type SiteCreation, type SiteProjectView, projectView } from './site-creation';
import type { SiteLocks } from './site-locks';
import { enqueueSiteOperation } from './site-operations';

export interface RecoveryPointResult {
  recoveryPoint: RecoveryPointView;
  operation: OperationDoc;
}

export interface UpgradeResult extends RecoveryPointResult {
  fromVersion: string;
  targetVersion: string;
}

export interface StagingResult {
  sourceRecoveryPoint: RecoveryPointView;
  operation: OperationDoc;
  project: SiteProjectView;
  siteUrl: string;
  adminUrl: string;
}

export interface SiteRecoveryDeps {
  models: PublisherModels;
  engine: OperationEngine;
  locks: SiteLocks;
  access: SiteAccess;
  creation: SiteCreation;
}

/**
 * What a site's recovery points make possible: capturing one, restoring one, upgrading along a
 * catalog edge with a pre-upgrade point to roll back to, and staging copies built from a fresh
 * point. Each holds the site's lifecycle lock for its operation.
 */
export class SiteRecovery {
  private readonly access: SiteAccess;
  constructor(private readonly d: SiteRecoveryDeps) {
    this.access = d.access;
  }

  async listRecoveryPoints(principal: Principal | null, projectId: string): Promise<RecoveryPointView[]> {
    const p = this.access.reader(principal);
    return this.pointsOf(await this.access.site(p, projectId));
  }

  async pointsOf(site: SiteDoc): Promise<RecoveryPointView[]> {
    const docs = await this.d.models.RecoveryPoint.find({ projectId: site._id })
      .sort({ createdAt: -1, _id: -1 })
      .limit(RECOVERY_POINT_LIST_LIMIT)
      .lean();
    return recoveryPointViews((ids) => this.d.engine.getMany(ids), docs);
  }

  /** A manual recovery point: a `recovery_point` operation captures it (202). */
  async createRecoveryPoint(
    principal: Principal | null,
    projectId: string,
    reason?: string | null,
  ): Promise<RecoveryPointResult> {
    const p = this.access.writer(principal);
    const site = await this.access.site(p, projectId);
    const why = reason?.trim() || null;
    if (why && why.length > MAX_REASON_LENGTH)
      throw badRequest('invalid_reason', `reason must be at most ${MAX_REASON_LENGTH} characters`);
    const operationId = randomUUID();
    const previous = await this.d.locks.begin(site, 'recovery_point', operationId);
    return this.d.locks.withLock(site, operationId, previous, async () => {
      const point = await this.newPoint(site, 'manual', why, operationId);
      const operation = await enqueueSiteOperation(this.d.engine, p, site._id, 'recovery_point', operationId, {
        recoveryPointId: point._id,
      });
      return { recoveryPoint: recoveryPointView(point), operation };
    });
  }

  /** Restores a completed point of this site (202); incomplete → 400, another project's → 404. */
  async restoreRecoveryPoint(
    principal: Principal | null,
    projectId: string,
    recoveryPointId: string,
  ): Promise<RecoveryPointResult> {
    const p = this.access.writer(principal);
    const site = await this.access.site(p, projectId);
    const doc = isUuid(recoveryPointId) ? await this.d.models.RecoveryPoint.findById(recoveryPointId).lean() : null;
    if (!doc || doc.projectId !== site._id || doc.accountId !== p.accountId)
      throw notFound('recovery_point_not_found', 'recovery point not found');
    const point = recoveryPointView(doc, await this.d.engine.get(doc.operationId));
    if (point.status !== 'completed') {
      throw badRequest('recovery_point_incomplete', `recovery point is ${point.status}; only a completed point can be restored`, {
        recovery_point_id: point.id,
        status: point.status,
      });
    }
    const operationId = randomUUID();
    const previous = await this.d.locks.begin(site, 'restore', operationId);
    const operation = await this.d.locks.withLock(site, operationId, previous, () =>
      enqueueSiteOperation(this.d.engine, p, site._id, 'restore', operationId, { recoveryPointId: point.id }),
    );
    return { recoveryPoint: point, operation };
  }

  /**
   * Upgrades along a catalog edge. The pre-upgrade recovery point is recorded before anything
   * changes (and returned); the `upgrade` operation captures it, upgrades, and rolls back to it
   * when the upgrade fails.
   */
  async upgrade(principal: Principal | null, projectId: string, targetVersion: string): Promise<UpgradeResult> {
    const p = this.access.writer(principal);
    const site = await this.access.site(p, projectId);
    if (!findRuntime(targetVersion)) {
      throw badRequest('unsupported_runtime_version', `runtime_version "${targetVersion}" is not in the runtime catalog`, {
        supported: RUNTIME_CATALOG.map((r) => r.version),
      });
    }
    if (!isUpgradeEdge(site.runtimeVersion, targetVersion)) {
      throw badRequest('unsupported_upgrade_path', `the catalog has no upgrade from ${site.runtimeVersion} to ${targetVersion}`, {
        from_version: site.runtimeVersion,
        target_version: targetVersion,
        allowed_targets: upgradeTargets(site.runtimeVersion),
      });
    }
    const operationId = randomUUID();
    const previous = await this.d.locks.begin(site, 'upgrade', operationId);
    return this.d.locks.withLock(site, operationId, previous, async () => {
      const point = await this.newPoint(site, 'pre_upgrade', `before upgrade to ${targetVersion}`, operationId);
      const input: UpgradeInput = { recoveryPointId: point._id, fromVersion: site.runtimeVersion, targetVersion };
      const operation = await enqueueSiteOperation(this.d.engine, p, site._id, 'upgrade', operationId, input);
      return { recoveryPoint: recoveryPointView(point), operation, fromVersion: site.runtimeVersion, targetVersion };
    });
  }

  /**
   * A staging copy: a fresh `staging_source` point of this site and a new hosted staging site built
   * from it, by one `staging` operation that holds both sites' locks. The copy takes a hosted-site
   * slot of the plan (402 when none is left).
   */
  async createStaging(principal: Principal | null, projectId: string, name?: string | null): Promise<StagingResult> {
    const p = this.access.writer(principal);
    const source = await this.access.site(p, projectId);
    const stagingName = (name ?? '').trim() || `${source.name.slice(0, MAX_SITE_NAME_LENGTH - 8)} staging`;
    if (stagingName.length > MAX_SITE_NAME_LENGTH)
      throw badRequest('invalid_name', `name must be at most ${MAX_SITE_NAME_LENGTH} characters`);
    const operationId = randomUUID();
    const previous = await this.d.locks.begin(source, 'staging', operationId);
    return this.d.locks.withLock(source, operationId, previous, async () => {
      const copy = await this.d.creation.newSite(p, {
        name: stagingName,
        runtimeVersion: source.runtimeVersion,
        deploymentMode: 'hosted',
        targetNodeId: null,
        placementMode: null,
        nodeSelectorTags: [],
        // A copy must not mail the production audience.
        mailEnabled: false,
        activeOperationId: operationId,
        environment: 'staging',
        sourceProjectId: source._id,
      });
      const { point, operation } = await this.enqueueStaging(p, source, copy, operationId);
      return {
        sourceRecoveryPoint: recoveryPointView(point),
        operation,
        project: projectView(copy),
        siteUrl: copy.siteUrl,
        adminUrl: copy.adminUrl,
      };
    });
  }

  /** retry_provisioning of a failed staging copy: a fresh point of the source and a new copy. */
  async retryStaging(p: Principal, copy: SiteDoc): Promise<OperationDoc> {
    const source = copy.sourceProjectId ? await this.d.models.Site.findById(copy.sourceProjectId).lean() : null;
    if (!source) throw conflict('invalid_site_state', 'the source of this staging copy no longer exists');
    const operationId = randomUUID();
    const previousCopy = await this.d.locks.begin(copy, 'retry_provisioning', operationId);
    return this.d.locks.withLock(copy, operationId, previousCopy, async () => {
      const previousSource = await this.d.locks.begin(source, 'staging', operationId);
      return this.d.locks.withLock(
        source,
        operationId,
        previousSource,
        async () => (await this.enqueueStaging(p, source, copy, operationId)).operation,
      );
    });
  }

  private async enqueueStaging(p: Principal, source: SiteDoc, copy: SiteDoc, operationId: string) {
    const point = await this.newPoint(source, 'staging_source', `staging copy ${copy._id}`, operationId);
    await this.d.models.Site.updateOne({ _id: copy._id }, { $set: { sourceRecoveryPointId: point._id, updatedAt: new Date() } });
    const input: StagingInput = { recoveryPointId: point._id, sourceProjectId: source._id, stagingProjectId: copy._id };
    const operation = await enqueueSiteOperation(this.d.engine, p, source._id, 'staging', operationId, input, copy._id);
    return { point, operation };
  }

  /** A new `pending` point pinned to the site's current release, captured by `operationId`. */
  private async newPoint(
    site: SiteDoc,
    kind: RecoveryPointKind,
    reason: string | null,
    operationId: string,
  ): Promise<RecoveryPointDoc> {
    const runtime = findRuntime(site.runtimeVersion) ?? defaultRuntime();
    const doc: RecoveryPointDoc = {
      _id: randomUUID(),
      accountId: site.accountId,
      projectId: site._id,
      kind,
      reason,
      status: 'pending',
      runtimeVersion: runtime.version,
      runtimeDigest: runtime.digest,
      runtimeImage: runtime.image,
      database: pendingCapture(),
      content: pendingCapture(),
      release: pendingCapture(),
      operationId,
      errorCode: null,
      createdAt: new Date(),
      completedAt: null,
    };
    await this.d.models.RecoveryPoint.create(doc);
    return doc;
  }
}
