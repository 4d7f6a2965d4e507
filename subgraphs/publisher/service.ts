import type { Connection } from 'mongoose';
import { randomUUID } from 'node:crypto';
import { PlatformError, badRequest, conflict, notFound, paymentRequired } from '../../core/errors';
import { IdempotencyStore } from '../../core/idempotency';
import { isDuplicateKey } from '../../core/mongo';
import { isUuid } from '../../core/ids';
import type { OperationEngine } from '../../core/operations/engine';
import type { OperationDoc } from '../../core/operations/model';
import type { ProjectDirectory, VerifiedSenders } from '../../core/ports';
import { type Plan, type Principal, requirePrincipal, requireWriter } from '../../core/principal';
import { DomainClaims, type DomainView } from './domain-claims';
import { siteExecutors, type StagingInput, type UpgradeInput } from './executors';
import { MailSettings, type MailSettingsView, type NewsletterProviderInput } from './mail-settings';
import {
  type PublisherModels,
  type RecoveryPointDoc,
  type RecoveryPointKind,
  type SiteDoc,
  pendingCapture,
  publisherModels,
} from './model';
import { MAX_REASON_LENGTH, MAX_SITE_NAME_LENGTH } from './limits';
import { ConnectedNodes, NODE_TAG } from './nodes';
import { RECOVERY_POINT_LIST_LIMIT, type RecoveryPointView, recoveryPointView, recoveryPointViews } from './recovery-points';
import {
  RUNTIME_CATALOG,
  defaultRuntime,
  findRuntime,
  isUpgradeEdge,
  type RuntimeOption,
  upgradeTargets,
} from './runtime-catalog';
import { SiteLocks, type SiteStatus, isRunning } from './site-locks';

export type { SiteStatus } from './site-locks';
import type { SimulatedInfrastructure } from './simulated-infrastructure';

/** Hosted sites an account may run, by plan (the `free` plan allows one); staging copies count. */
export const HOSTED_SITE_LIMIT: Record<Plan, number> = { free: 1, pro: 100 };
export { SITE_ACTIONS } from './limits';
import { SITE_ACTIONS } from './limits';
export type SiteAction = (typeof SITE_ACTIONS)[number];
/** What the publishing runtime is, as reported in `project.source_type` and `project.runtime`. */
export const RUNTIME_KIND = 'publisher';
export interface CreateSiteInput {
  name?: string | null;
  runtimeVersion?: string | null;
  deploymentMode?: string | null;
  targetNodeId?: string | null;
  placementMode?: string | null;
  nodeSelectorTags?: string[] | null;
  mailEnabled?: boolean | null;
}

export interface SiteProjectView {
  id: string;
  sourceType: string;
  runtime: string;
}

export interface CreatedSite {
  project: SiteProjectView;
  siteUrl: string;
  adminUrl: string;
  operation: OperationDoc;
}

export interface SiteMetadata {
  installation: {
    runtimeVersion: string;
    runtimeLabel: string;
    image: string;
    digest: string;
    status: SiteStatus;
    environment: string;
    sourceProjectId: string | null;
    sourceRecoveryPointId: string | null;
    siteUrl: string;
    adminUrl: string;
    domain: string | null;
    deploymentMode: string;
    targetNodeId: string | null;
    placementMode: string | null;
    nodeSelectorTags: string[];
  };
  project: { id: string; name: string; sourceType: string; runtime: string; createdAt: Date };
  database: { engine: string; version: string; storageGb: number; status: string };
  activeOperation: OperationDoc | null;
  domain: DomainView | null;
  mail: { enabled: boolean; transactionalConfigured: boolean; senderVerified: boolean; newsletterProviderConfigured: boolean };
}

export interface SiteHistory {
  projectId: string;
  /** The lifecycle operation running now, if any. */
  activeOperation: OperationDoc | null;
  /** The most recent lifecycle operation, running or finished. */
  latestOperation: OperationDoc | null;
  recoveryPoints: RecoveryPointView[];
}

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

export interface PublisherDeps {
  conn: Connection;
  /** Kernel ports, read at call time: the project directory and the verified senders. */
  projects: () => ProjectDirectory;
  senders: () => VerifiedSenders;
  engine: OperationEngine;
  nodes: ConnectedNodes;
  /** Domain hosted sites live under: https://<slug>.<sitesDomain>. */
  sitesDomain: string;
  /** The publishing feature for this environment; when off every route answers 404. */
  features: { publisherEnabled: boolean };
  infra: SimulatedInfrastructure;
}

/** Ids a site creation fixes up front, so a retried create resumes with them. */
interface PlannedSite {
  projectId: string;
  operationId: string;
}

/** The publishing area's rules: catalog, sites, lifecycle operations, plan gates, access. */
export class PublisherService {
  readonly models: PublisherModels;
  private readonly idempotency: IdempotencyStore;
  private readonly mail: MailSettings;
  private readonly locks: SiteLocks;
  private readonly domains: DomainClaims;

  constructor(private readonly deps: PublisherDeps) {
    this.models = publisherModels(deps.conn);
    this.idempotency = new IdempotencyStore(deps.conn);
    this.mail = new MailSettings(this.models, deps.senders);
    this.locks = new SiteLocks(this.models, deps.engine);
    this.domains = new DomainClaims(this.models, deps.sitesDomain);
  }

  /** The durable operations of sites, registered by the area where workers run. */
  executors() {
    return siteExecutors({ engine: this.deps.engine, models: this.models, infra: this.deps.infra });
  }

  runtimeOptions(principal: Principal | null): readonly RuntimeOption[] {
    this.reader(principal);
    return RUNTIME_CATALOG;
  }

  async createSite(principal: Principal | null, input: CreateSiteInput, idempotencyKey?: string | null): Promise<CreatedSite> {
    const p = this.writer(principal);
    if (!idempotencyKey) return this.provisionSite(p, input, { projectId: randomUUID(), operationId: randomUUID() });
    // The project and operation ids are fixed when the key is first claimed; a retry after a crash
    // resumes with the same ids (every step below is idempotent per id) instead of creating twice.
    const { value } = await this.idempotency.run(
      `publisher.sites:${p.accountId}`,
      idempotencyKey,
      input,
      async (attempt) => {
        const created = await this.provisionSite(p, input, attempt.plan as unknown as PlannedSite, () =>
          attempt.sideEffectsBegin(),
        );
        return { ...created, operation: { _id: created.operation._id } };
      },
      { plan: () => ({ projectId: randomUUID(), operationId: randomUUID() }) },
    );
    const operation = await this.deps.engine.get(value.operation._id as string);
    if (!operation) throw notFound('operation_not_found', 'operation not found');
    return { ...value, operation };
  }

  private async provisionSite(
    p: Principal,
    input: CreateSiteInput,
    ids: PlannedSite,
    sideEffectsBegin: () => Promise<void> = async () => undefined,
  ): Promise<CreatedSite> {
    const spec = await this.validateCreate(p, input);
    await sideEffectsBegin();
    const operationId = ids.operationId;
    const site = await this.newSite(
      p,
      {
        name: spec.name,
        runtimeVersion: spec.runtime.version,
        deploymentMode: spec.deploymentMode,
        targetNodeId: spec.targetNodeId,
        placementMode: spec.placementMode,
        nodeSelectorTags: [...spec.nodeSelectorTags],
        mailEnabled: spec.mailEnabled,
        activeOperationId: operationId,
      },
      ids.projectId,
    );
    const operation = await this.enqueue(p, site._id, 'provision', operationId, {
      runtimeVersion: spec.runtime.version,
      name: spec.name,
    });
    return { project: projectView(site), siteUrl: site.siteUrl, adminUrl: site.adminUrl, operation };
  }

  /**
   * A new project and its site record (provisioning, holding `activeOperationId`'s lock). A hosted
   * site takes a slot of the plan first (402 when none is left), given back if the site is not created.
   */
  private async newSite(p: Principal, fields: NewSiteFields, siteId: string = randomUUID()): Promise<SiteDoc> {
    const hosted = fields.deploymentMode === 'hosted';
    if (hosted) await this.reserveHostedSite(p, siteId);
    try {
      return await this.createSiteRecord(p, fields, siteId);
    } catch (e) {
      if (hosted) await this.releaseHostedSite(p.accountId, siteId);
      throw e;
    }
  }

  /** The project and its site record with id `siteId`; when both exist already (a resumed create), the stored site. */
  private async createSiteRecord(p: Principal, fields: NewSiteFields, siteId: string): Promise<SiteDoc> {
    const existing = await this.models.Site.findById(siteId).lean();
    if (existing) {
      if (existing.accountId !== p.accountId) throw conflict('site_id_conflict', 'a site with this id already exists');
      return existing;
    }
    const project = await this.deps.projects().createProject(p.accountId, fields.name, RUNTIME_KIND, { id: siteId });
    const slug = `${slugify(fields.name)}-${project.id.slice(0, 6)}`;
    const siteUrl = `https://${slug}.${this.deps.sitesDomain}`;
    const now = new Date();
    const doc: SiteDoc = {
      _id: project.id,
      accountId: p.accountId,
      slug,
      status: 'provisioning',
      siteUrl,
      adminUrl: `${siteUrl}/admin/`,
      environment: 'production',
      sourceProjectId: null,
      sourceRecoveryPointId: null,
      domain: null,
      domainStatus: null,
      domainUpdatedAt: null,
      mailSenderEmail: null,
      createdAt: now,
      updatedAt: now,
      ...fields,
      activeOperationAt: fields.activeOperationId ? now : null,
    };
    try {
      await this.models.Site.create(doc);
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
      const raced = await this.models.Site.findById(siteId).lean();
      if (!raced || raced.accountId !== p.accountId) throw e;
      return raced;
    }
    return doc;
  }

  private async validateCreate(p: Principal, input: CreateSiteInput) {
    const name = (input.name ?? '').trim();
    if (!name) throw badRequest('invalid_name', 'name is required');
    if (name.length > MAX_SITE_NAME_LENGTH) {
      throw badRequest('invalid_name', `name must be at most ${MAX_SITE_NAME_LENGTH} characters`);
    }
    const runtime = input.runtimeVersion ? findRuntime(input.runtimeVersion) : defaultRuntime();
    if (!runtime) {
      throw badRequest('unsupported_runtime_version', `runtime_version "${input.runtimeVersion}" is not in the runtime catalog`, {
        supported: RUNTIME_CATALOG.map((r) => r.version),
      });
    }
    const deploymentMode = input.deploymentMode ?? 'hosted';
    if (deploymentMode !== 'hosted' && deploymentMode !== 'connected_node') {
      throw badRequest('invalid_deployment_mode', 'deployment_mode must be `hosted` or `connected_node`');
    }
    const tags = input.nodeSelectorTags ?? [];
    if (deploymentMode === 'hosted') {
      if (input.targetNodeId || input.placementMode || tags.length) {
        throw badRequest(
          'invalid_deployment_mode',
          'target_node_id, placement_mode and node_selector_tags are only used with connected_node',
        );
      }
      return {
        name,
        runtime,
        deploymentMode,
        targetNodeId: null,
        placementMode: null,
        nodeSelectorTags: [],
        mailEnabled: Boolean(input.mailEnabled),
      } as const;
    }
    if (!input.targetNodeId || !isUuid(input.targetNodeId)) {
      throw badRequest('invalid_target_node', 'target_node_id must be the UUID of a connected node');
    }
    const placementMode = input.placementMode ?? 'manual';
    if (placementMode !== 'manual') throw badRequest('invalid_placement_mode', 'placement_mode must be `manual`');
    if (tags.length > 20) throw badRequest('invalid_node_selector_tags', 'at most 20 node_selector_tags');
    for (const t of tags) {
      if (!NODE_TAG.test(t)) throw badRequest('invalid_node_selector_tags', `tag "${t}" is not of the form <key>:<value>`);
    }
    const node = await this.deps.nodes.findForAccount(p.accountId, input.targetNodeId);
    // A well-formed reference to nothing this account owns: 422 (the document's schema cannot say it).
    if (!node) {
      throw new PlatformError('unknown_target_node', 422, 'target_node_id is not a connected node of this account');
    }
    return {
      name,
      runtime,
      deploymentMode,
      targetNodeId: node._id,
      placementMode,
      nodeSelectorTags: [...new Set(tags)],
      mailEnabled: Boolean(input.mailEnabled),
    } as const;
  }

  /** Takes one hosted-site slot of the account's plan, atomically; 402 when none is left. */
  /**
   * Takes a hosted-site slot of the plan for `siteId` (402 when none is left). Idempotent per site:
   * the quota lists the sites holding a slot, so a resumed create does not take a second one and a
   * release given twice does not free two.
   */
  private async reserveHostedSite(p: Principal, siteId: string): Promise<void> {
    const limit = HOSTED_SITE_LIMIT[p.plan];
    try {
      const updated = await this.models.SiteQuota.findOneAndUpdate(
        { _id: p.accountId, hostedSites: { $lt: limit }, holders: { $ne: siteId } },
        { $inc: { hostedSites: 1 }, $push: { holders: siteId } },
        { upsert: true, new: true },
      );
      if (updated) return;
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
    }
    const quota = await this.models.SiteQuota.findById(p.accountId).lean();
    if (quota?.holders?.includes(siteId)) return;
    throw paymentRequired('plan_limit_reached', `the ${p.plan} plan allows ${limit} hosted site${limit === 1 ? '' : 's'}`, {
      plan: p.plan,
      limit,
    });
  }

  /** Gives back the slot `siteId` holds (a failed create, a deleted site, a provisioning failed for good); idempotent. */
  async releaseHostedSite(accountId: string, siteId: string): Promise<void> {
    await this.models.SiteQuota.updateOne(
      { _id: accountId, holders: siteId },
      { $inc: { hostedSites: -1 }, $pull: { holders: siteId } },
    );
  }

  /** An operation of the project, or one acting on its site (a staging copy's operation belongs to its source). */
  async getOperation(principal: Principal | null, projectId: string, operationId: string): Promise<OperationDoc> {
    const p = this.reader(principal);
    await this.site(p, projectId);
    const op = isUuid(operationId) ? await this.deps.engine.get(operationId) : null;
    const visible = op && op.accountId === p.accountId && (op.projectId === projectId || op.resourceId === projectId);
    if (!op || !visible) throw notFound('operation_not_found', 'operation not found');
    return op;
  }

  async siteForProject(principal: Principal | null, projectId: string): Promise<{ site: SiteDoc; status: SiteStatus } | null> {
    if (!principal || !this.deps.features.publisherEnabled) return null;
    const site = await this.models.Site.findById(projectId).lean();
    if (!site || site.accountId !== principal.accountId) return null;
    return { site, status: (await this.locks.state(site)).status };
  }

  async metadata(principal: Principal | null, projectId: string): Promise<SiteMetadata> {
    const p = this.reader(principal);
    const site = await this.site(p, projectId);
    const [project, { status, activeOperation }, mail] = await Promise.all([
      this.deps.projects().findProject(projectId),
      this.locks.state(site),
      this.mail.view(site),
    ]);
    const runtime = findRuntime(site.runtimeVersion) ?? defaultRuntime();
    return {
      installation: {
        runtimeVersion: site.runtimeVersion,
        runtimeLabel: runtime.label,
        image: runtime.image,
        digest: runtime.digest,
        status,
        environment: site.environment ?? 'production',
        sourceProjectId: site.sourceProjectId ?? null,
        sourceRecoveryPointId: site.sourceRecoveryPointId ?? null,
        siteUrl: site.siteUrl,
        adminUrl: site.adminUrl,
        domain: site.domain,
        deploymentMode: site.deploymentMode,
        targetNodeId: site.targetNodeId,
        placementMode: site.placementMode,
        nodeSelectorTags: site.nodeSelectorTags,
      },
      project: {
        id: site._id,
        name: project?.name ?? site.name,
        sourceType: RUNTIME_KIND,
        runtime: RUNTIME_KIND,
        createdAt: site.createdAt,
      },
      database: {
        engine: runtime.databaseRequirements.engine,
        version: runtime.databaseRequirements.minVersion,
        storageGb: runtime.databaseRequirements.minStorageGb,
        status: status === 'provisioning' ? 'provisioning' : status === 'provision_failed' ? 'unavailable' : 'available',
      },
      activeOperation: isRunning(activeOperation) ? activeOperation : null,
      domain: this.domains.view(site),
      mail: {
        enabled: mail.enabled,
        transactionalConfigured: mail.transactional.configured,
        senderVerified: mail.transactional.verified,
        newsletterProviderConfigured: mail.newsletterProvider.configured,
      },
    };
  }

  /** The latest lifecycle operation (and whether it still runs) plus the recovery points, newest first. */
  async history(principal: Principal | null, projectId: string): Promise<SiteHistory> {
    const p = this.reader(principal);
    const site = await this.site(p, projectId);
    const [{ activeOperation }, recoveryPoints] = await Promise.all([this.locks.state(site), this.pointsOf(site)]);
    return {
      projectId: site._id,
      activeOperation: isRunning(activeOperation) ? activeOperation : null,
      latestOperation: activeOperation,
      recoveryPoints,
    };
  }

  /** Lifecycle actions, allowed only where they make sense; one lifecycle operation per site at a time. */
  async action(principal: Principal | null, projectId: string, action: string): Promise<OperationDoc> {
    const p = this.writer(principal);
    if (!(SITE_ACTIONS as readonly string[]).includes(action)) {
      throw badRequest('invalid_action', `action must be one of ${SITE_ACTIONS.join(', ')}`);
    }
    const site = await this.site(p, projectId);
    if (action === 'retry_provisioning' && site.environment === 'staging') return this.retryStaging(p, site);
    const operationId = randomUUID();
    const previous = await this.locks.begin(site, action as SiteAction, operationId);
    const operationType = action === 'retry_provisioning' ? 'provision' : action;
    return this.locks.withLock(site, operationId, previous, async () => {
      // A provisioning that failed for good gave its slot back: retrying takes one again (402 when none is left).
      if (action === 'retry_provisioning' && site.deploymentMode === 'hosted') await this.reserveHostedSite(p, site._id);
      return this.enqueue(p, projectId, operationType, operationId, { runtimeVersion: site.runtimeVersion });
    });
  }

  /** Attaches a custom domain (replacing any other); it waits in `pending_verification` for DNS. */
  async setDomain(principal: Principal | null, projectId: string, domain: string): Promise<DomainView> {
    const p = this.writer(principal);
    return this.domains.attach(await this.site(p, projectId), domain);
  }

  async listRecoveryPoints(principal: Principal | null, projectId: string): Promise<RecoveryPointView[]> {
    const p = this.reader(principal);
    return this.pointsOf(await this.site(p, projectId));
  }

  private async pointsOf(site: SiteDoc): Promise<RecoveryPointView[]> {
    const docs = await this.models.RecoveryPoint.find({ projectId: site._id })
      .sort({ createdAt: -1, _id: -1 })
      .limit(RECOVERY_POINT_LIST_LIMIT)
      .lean();
    return recoveryPointViews(
      (ids) =>
        this.deps.engine.model
          .find({ _id: { $in: ids } })
          .lean<OperationDoc[]>()
          .exec(),
      docs,
    );
  }

  /** A manual recovery point: a `recovery_point` operation captures it (202). */
  async createRecoveryPoint(
    principal: Principal | null,
    projectId: string,
    reason?: string | null,
  ): Promise<RecoveryPointResult> {
    const p = this.writer(principal);
    const site = await this.site(p, projectId);
    const why = reason?.trim() || null;
    if (why && why.length > MAX_REASON_LENGTH)
      throw badRequest('invalid_reason', `reason must be at most ${MAX_REASON_LENGTH} characters`);
    const operationId = randomUUID();
    const previous = await this.locks.begin(site, 'recovery_point', operationId);
    return this.locks.withLock(site, operationId, previous, async () => {
      const point = await this.newPoint(site, 'manual', why, operationId);
      const operation = await this.enqueue(p, site._id, 'recovery_point', operationId, { recoveryPointId: point._id });
      return { recoveryPoint: recoveryPointView(point), operation };
    });
  }

  /** Restores a completed point of this site (202); incomplete → 400, another project's → 404. */
  async restoreRecoveryPoint(
    principal: Principal | null,
    projectId: string,
    recoveryPointId: string,
  ): Promise<RecoveryPointResult> {
    const p = this.writer(principal);
    const site = await this.site(p, projectId);
    const doc = isUuid(recoveryPointId) ? await this.models.RecoveryPoint.findById(recoveryPointId).lean() : null;
    if (!doc || doc.projectId !== site._id || doc.accountId !== p.accountId)
      throw notFound('recovery_point_not_found', 'recovery point not found');
    const point = recoveryPointView(doc, await this.deps.engine.get(doc.operationId));
    if (point.status !== 'completed') {
      throw badRequest('recovery_point_incomplete', `recovery point is ${point.status}; only a completed point can be restored`, {
        recovery_point_id: point.id,
        status: point.status,
      });
    }
    const operationId = randomUUID();
    const previous = await this.locks.begin(site, 'restore', operationId);
    const operation = await this.locks.withLock(site, operationId, previous, () =>
      this.enqueue(p, site._id, 'restore', operationId, { recoveryPointId: point.id }),
    );
    return { recoveryPoint: point, operation };
  }

  /**
   * Upgrades along a catalog edge. The pre-upgrade recovery point is recorded before anything
   * changes (and returned); the `upgrade` operation captures it, upgrades, and rolls back to it
   * when the upgrade fails.
   */
  async upgrade(principal: Principal | null, projectId: string, targetVersion: string): Promise<UpgradeResult> {
    const p = this.writer(principal);
    const site = await this.site(p, projectId);
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
    const previous = await this.locks.begin(site, 'upgrade', operationId);
    return this.locks.withLock(site, operationId, previous, async () => {
      const point = await this.newPoint(site, 'pre_upgrade', `before upgrade to ${targetVersion}`, operationId);
      const input: UpgradeInput = { recoveryPointId: point._id, fromVersion: site.runtimeVersion, targetVersion };
      const operation = await this.enqueue(p, site._id, 'upgrade', operationId, input);
      return { recoveryPoint: recoveryPointView(point), operation, fromVersion: site.runtimeVersion, targetVersion };
    });
  }

  /**
   * A staging copy: a fresh `staging_source` point of this site and a new hosted staging site built
   * from it, by one `staging` operation that holds both sites' locks. The copy takes a hosted-site
   * slot of the plan (402 when none is left).
   */
  async createStaging(principal: Principal | null, projectId: string, name?: string | null): Promise<StagingResult> {
    const p = this.writer(principal);
    const source = await this.site(p, projectId);
    const stagingName = (name ?? '').trim() || `${source.name.slice(0, MAX_SITE_NAME_LENGTH - 8)} staging`;
    if (stagingName.length > MAX_SITE_NAME_LENGTH)
      throw badRequest('invalid_name', `name must be at most ${MAX_SITE_NAME_LENGTH} characters`);
    const operationId = randomUUID();
    const previous = await this.locks.begin(source, 'staging', operationId);
    return this.locks.withLock(source, operationId, previous, async () => {
      const copy = await this.newSite(p, {
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
  private async retryStaging(p: Principal, copy: SiteDoc): Promise<OperationDoc> {
    const source = copy.sourceProjectId ? await this.models.Site.findById(copy.sourceProjectId).lean() : null;
    if (!source) throw conflict('invalid_site_state', 'the source of this staging copy no longer exists');
    const operationId = randomUUID();
    const previousCopy = await this.locks.begin(copy, 'retry_provisioning', operationId);
    return this.locks.withLock(copy, operationId, previousCopy, async () => {
      const previousSource = await this.locks.begin(source, 'staging', operationId);
      return this.locks.withLock(
        source,
        operationId,
        previousSource,
        async () => (await this.enqueueStaging(p, source, copy, operationId)).operation,
      );
    });
  }

  private async enqueueStaging(p: Principal, source: SiteDoc, copy: SiteDoc, operationId: string) {
    const point = await this.newPoint(source, 'staging_source', `staging copy ${copy._id}`, operationId);
    await this.models.Site.updateOne({ _id: copy._id }, { $set: { sourceRecoveryPointId: point._id, updatedAt: new Date() } });
    const input: StagingInput = { recoveryPointId: point._id, sourceProjectId: source._id, stagingProjectId: copy._id };
    const operation = await this.enqueue(p, source._id, 'staging', operationId, input, copy._id);
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
    await this.models.RecoveryPoint.create(doc);
    return doc;
  }

  async mailSettings(principal: Principal | null, projectId: string): Promise<MailSettingsView> {
    const p = this.reader(principal);
    return this.mail.view(await this.site(p, projectId));
  }

  async setMailSender(principal: Principal | null, projectId: string, senderEmail: string): Promise<MailSettingsView> {
    const p = this.writer(principal);
    const site = await this.site(p, projectId);
    return this.mail.view(await this.mail.setSender(site, senderEmail));
  }

  async setNewsletterProvider(
    principal: Principal | null,
    projectId: string,
    input: NewsletterProviderInput,
  ): Promise<MailSettingsView> {
    const p = this.writer(principal);
    const site = await this.site(p, projectId);
    await this.mail.setProvider(site, input);
    return this.mail.view(site);
  }

  async deleteNewsletterProvider(principal: Principal | null, projectId: string): Promise<MailSettingsView> {
    const p = this.writer(principal);
    const site = await this.site(p, projectId);
    await this.mail.deleteProvider(site);
    return this.mail.view(site);
  }

  /** Enqueues a site operation of the project; `siteId` is the site it acts on (a staging copy's differs). */
  private enqueue(p: Principal, projectId: string, operationType: string, id: string, input: object, siteId = projectId) {
    return this.deps.engine.enqueue({
      id,
      accountId: p.accountId,
      projectId,
      resourceType: 'site',
      resourceId: siteId,
      operationType,
      input,
      initiator: { type: 'api_key', id: p.keyId },
    });
  }

  /** The principal's site for a project; a missing or foreign one is concealed as 404. */
  private async site(p: Principal, projectId: string): Promise<SiteDoc> {
    const site = isUuid(projectId) ? await this.models.Site.findById(projectId).lean() : null;
    if (!site || site.accountId !== p.accountId) throw notFound('project_not_found', 'project not found');
    return site;
  }

  private reader(principal: Principal | null): Principal {
    const p = requirePrincipal(principal);
    if (!this.deps.features.publisherEnabled)
      throw notFound('publisher_disabled', 'publishing is not enabled in this environment');
    return p;
  }

  private writer(principal: Principal | null): Principal {
    this.reader(principal);
    return requireWriter(principal);
  }
}

/** What a caller chooses of a new site; the rest (ids, addresses, state) `newSite` derives. */
type NewSiteFields = Pick<
  SiteDoc,
  | 'name'
  | 'runtimeVersion'
  | 'deploymentMode'
  | 'targetNodeId'
  | 'placementMode'
  | 'nodeSelectorTags'
  | 'mailEnabled'
  | 'activeOperationId'
> &
  Partial<Pick<SiteDoc, 'environment' | 'sourceProjectId' | 'sourceRecoveryPointId'>>;

const projectView = (site: SiteDoc): SiteProjectView => ({ id: site._id, sourceType: RUNTIME_KIND, runtime: RUNTIME_KIND });

function slugify(name: string): string {
  const s = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/g, '');
  return s || 'site';
}
