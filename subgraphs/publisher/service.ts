import type { Connection } from 'mongoose';
import { randomUUID } from 'node:crypto';
import { badRequest, conflict, notFound } from '../../core/errors';
import { IdempotencyStore } from '../../core/idempotency';
import { isUuid } from '../../core/ids';
import type { OperationEngine } from '../../core/operations/engine';
import type { OperationDoc } from '../../core/operations/model';
import type { ProjectDirectory, VerifiedSenders } from '../../core/ports';
import type { Principal } from '../../core/principal';
import type { SiteProcess } from '../../dataplane/sites';
import type { SiteActionRequest } from '../../core/site-actions';
import type { ActivityScopeTarget } from '../../core/activity-scopes';
import { type DomainClaimOptions, DomainClaims, type DomainView } from './domain-claims';
import { siteExecutors } from './executors';
import { HostedSlots } from './hosted-slots';
import { MailSettings, type MailSettingsView, type NewsletterProviderInput } from './mail-settings';
import { type PublisherModels, type SiteDoc, publisherModels } from './model';
import type { ConnectedNodes, ReportedProcess } from '../../nodes/registry';
import type { RecoveryPointView } from './recovery-points';
import { RUNTIME_CATALOG, defaultRuntime, findRuntime, type RuntimeOption } from './runtime-catalog';
import { SiteAccess } from './site-access';
import { type CreateSiteInput, type CreatedSite, RUNTIME_KIND, SiteCreation } from './site-creation';
import { SiteLocks, type SiteStatus, isRunning } from './site-locks';
import { enqueueSiteOperation } from './site-operations';
import { type RecoveryPointResult, SiteRecovery, type StagingResult, type UpgradeResult } from './site-recovery';
import type { Infrastructure } from './simulated-infrastructure';

export type { SiteStatus } from './site-locks';
export type { CreateSiteInput, CreatedSite } from './site-creation';

export { SITE_ACTIONS } from './limits';
import { SITE_ACTIONS } from './limits';
export type SiteAction = (typeof SITE_ACTIONS)[number];
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
  database: { id: string | null; engine: string; version: string; storageGb: number; status: string };
  activeOperation: OperationDoc | null;
  domain: DomainView | null;
  mail: { enabled: boolean; transactionalConfigured: boolean; senderVerified: boolean; newsletterProviderConfigured: boolean };
  /** A connected-node site's node and its status (docs/contracts.md); null for a hosted site. */
  node: { id: string; status: string } | null;
  /**
   * The site's process: a hosted one's as the data plane's supervisor sees it, null unless this process
   * hosts it (real executor); a connected-node one's as its node last reported it (decision 0385).
   */
  process: SiteProcessView | null;
}

/** A site's process in its metadata; `reportedAt` is when its node reported it (null: read live here). */
export type SiteProcessView = ReportedProcess | (SiteProcess & { reportedAt: null });

export interface SiteHistory {
  projectId: string;
  /** The lifecycle operation running now, if any. */
  activeOperation: OperationDoc | null;
  /** The most recent lifecycle operation, running or finished. */
  latestOperation: OperationDoc | null;
  recoveryPoints: RecoveryPointView[];
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
  /** Custom-domain ownership checks: the DNS resolver and how long an unverified claim lasts. */
  domains: Omit<DomainClaimOptions, 'sitesDomain'>;
  /** The publishing feature for this environment; when off every route answers 404. */
  features: { publisherEnabled: boolean };
  infra: Infrastructure;
  /** A site's public address from its slug (the data plane's `SITES_BASE_URL`); default `https://<slug>.<sitesDomain>`. */
  siteUrl?: (slug: string) => string;
  /** The memory this node gives hosted sites, in MiB (hosted-slots.ts); unset: unbounded. */
  nodeMemoryMb?: number | null;
  /** `PUBLISHER_IDLE_SLEEP_MS` (0: sites never sleep), for the node's memory admission. */
  idleSleepMs?: number;
  /**
   * A hosted site's process from the data plane's supervisor (`SiteHost.process`) where this process
   * runs the real executor; unset or null otherwise.
   */
  siteProcess?: (siteId: string) => SiteProcess | null;
}

/**
 * The publishing area's face: what resolvers call. The rules live in files of one concept each —
 * access (`site-access.ts`), plan slots (`hosted-slots.ts`), creation (`site-creation.ts`), the
 * lifecycle lock (`site-locks.ts`), recovery, restore, upgrade and staging (`site-recovery.ts`),
 * domains (`domain-claims.ts`) and mail settings (`mail-settings.ts`); this class wires them and
 * keeps the reads and lifecycle actions that need several of them.
 */
export class PublisherService {
  readonly models: PublisherModels;
  private readonly access: SiteAccess;
  private readonly slots: HostedSlots;
  private readonly mail: MailSettings;
  private readonly locks: SiteLocks;
  private readonly domains: DomainClaims;
  private readonly creation: SiteCreation;
  private readonly recovery: SiteRecovery;

  constructor(private readonly deps: PublisherDeps) {
    const models = publisherModels(deps.conn);
    this.models = models;
    this.access = new SiteAccess(models, deps.features);
    this.slots = new HostedSlots(models, deps.nodeMemoryMb ?? null, deps.idleSleepMs ?? 0);
    this.mail = new MailSettings(models, deps.senders);
    this.locks = new SiteLocks(models, deps.engine);
    this.domains = new DomainClaims(models, { sitesDomain: deps.sitesDomain, ...deps.domains });
    this.creation = new SiteCreation({
      models,
      engine: deps.engine,
      idempotency: new IdempotencyStore(deps.conn),
      projects: deps.projects,
      nodes: deps.nodes,
      slots: this.slots,
      access: this.access,
      sitesDomain: deps.sitesDomain,
      siteUrl: deps.siteUrl,
    });
    this.recovery = new SiteRecovery({
      models,
      engine: deps.engine,
      locks: this.locks,
      access: this.access,
      creation: this.creation,
    });
  }

  /** The durable operations of sites, registered by the area where workers run. */
  executors() {
    return siteExecutors({ engine: this.deps.engine, models: this.models, infra: this.deps.infra });
  }

  runtimeOptions(principal: Principal | null): readonly RuntimeOption[] {
    this.access.reader(principal);
    return RUNTIME_CATALOG;
  }

  createSite(principal: Principal | null, input: CreateSiteInput, idempotencyKey?: string | null): Promise<CreatedSite> {
    return this.creation.createSite(principal, input, idempotencyKey);
  }

  /** Gives back the slot `siteId` holds (a failed create, a deleted site, a provisioning failed for good); idempotent. */
  releaseHostedSite(accountId: string, siteId: string): Promise<void> {
    return this.slots.release(accountId, siteId);
  }

  listRecoveryPoints(principal: Principal | null, projectId: string): Promise<RecoveryPointView[]> {
    return this.recovery.listRecoveryPoints(principal, projectId);
  }

  createRecoveryPoint(principal: Principal | null, projectId: string, reason?: string | null): Promise<RecoveryPointResult> {
    return this.recovery.createRecoveryPoint(principal, projectId, reason);
  }

  restoreRecoveryPoint(principal: Principal | null, projectId: string, recoveryPointId: string): Promise<RecoveryPointResult> {
    return this.recovery.restoreRecoveryPoint(principal, projectId, recoveryPointId);
  }

  upgrade(principal: Principal | null, projectId: string, targetVersion: string): Promise<UpgradeResult> {
    return this.recovery.upgrade(principal, projectId, targetVersion);
  }

  createStaging(principal: Principal | null, projectId: string, name?: string | null): Promise<StagingResult> {
    return this.recovery.createStaging(principal, projectId, name);
  }

  /** An operation of the project, or one acting on its site (a staging copy's operation belongs to its source). */
  async getOperation(principal: Principal | null, projectId: string, operationId: string): Promise<OperationDoc> {
    const p = this.access.reader(principal);
    await this.access.site(p, projectId, { includeDeleted: true });
    const op = isUuid(operationId) ? await this.deps.engine.get(operationId) : null;
    const visible = op && op.accountId === p.accountId && (op.projectId === projectId || op.resourceId === projectId);
    if (!op || !visible) throw notFound('operation_not_found', 'operation not found');
    return op;
  }

  async siteForProject(principal: Principal | null, projectId: string): Promise<{ site: SiteDoc; status: SiteStatus } | null> {
    if (!principal || !this.deps.features.publisherEnabled) return null;
    const site = await this.models.Site.findById(projectId).lean();
    if (!site || site.accountId !== principal.accountId || site.status === 'deleted') return null;
    return { site, status: (await this.locks.state(site)).status };
  }

  async metadata(principal: Principal | null, projectId: string): Promise<SiteMetadata> {
    const p = this.access.reader(principal);
    const site = await this.access.site(p, projectId);
    const [project, { status, activeOperation }, mail, placed] = await Promise.all([
      this.deps.projects().findProject(projectId),
      this.locks.state(site),
      this.mail.view(site),
      this.deps.nodes.ofSite(site),
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
        id: site.databaseId ?? null,
        engine: runtime.databaseRequirements.engine,
        version: runtime.databaseRequirements.minVersion,
        storageGb: runtime.databaseRequirements.minStorageGb,
        status: status === 'provisioning' ? 'provisioning' : status === 'provision_failed' ? 'unavailable' : 'available',
      },
      activeOperation: isRunning(activeOperation) ? activeOperation : null,
      domain: this.domains.view(site),
      node: placed.node,
      // A hosted site's process: this process's plane's, else its agent's report (one outside the platform).
      process: (site.deploymentMode === 'hosted' && this.hostedProcess(site._id)) || placed.process,
      mail: {
        enabled: mail.enabled,
        transactionalConfigured: mail.transactional.configured,
        senderVerified: mail.transactional.verified,
        newsletterProviderConfigured: mail.newsletterProvider.configured,
      },
    };
  }

  private hostedProcess(siteId: string): SiteProcessView | null {
    const p = this.deps.siteProcess?.(siteId);
    return p ? { ...p, reportedAt: null } : null;
  }

  /** The latest lifecycle operation (and whether it still runs) plus the recovery points, newest first. */
  async history(principal: Principal | null, projectId: string): Promise<SiteHistory> {
    const p = this.access.reader(principal);
    const site = await this.access.site(p, projectId);
    const [{ activeOperation }, recoveryPoints] = await Promise.all([this.locks.state(site), this.recovery.pointsOf(site)]);
    return {
      projectId: site._id,
      activeOperation: isRunning(activeOperation) ? activeOperation : null,
      latestOperation: activeOperation,
      recoveryPoints,
    };
  }

  /** Lifecycle actions, allowed only where they make sense; one lifecycle operation per site at a time. */
  async action(principal: Principal | null, projectId: string, action: string): Promise<OperationDoc> {
    const p = this.access.writer(principal);
    if (!(SITE_ACTIONS as readonly string[]).includes(action)) {
      throw badRequest('invalid_action', `action must be one of ${SITE_ACTIONS.join(', ')}`);
    }
    const site = await this.access.site(p, projectId);
    await this.deps.nodes.assertReachable(site);
    if (action === 'retry_provisioning' && site.environment === 'staging') return this.recovery.retryStaging(p, site);
    const operationId = randomUUID();
    const previous = await this.locks.begin(site, action as SiteAction, operationId);
    const operationType = action === 'retry_provisioning' ? 'provision' : action;
    return this.locks.withLock(site, operationId, previous, async () => {
      // A provisioning that failed for good gave its slot back: retrying takes one again (402 when none is left).
      if (action === 'retry_provisioning' && site.deploymentMode === 'hosted')
        await this.slots.reserve(p, site._id, site.runtimeVersion);
      return enqueueSiteOperation(this.deps.engine, p, projectId, operationType, operationId, {
        runtimeVersion: site.runtimeVersion,
      });
    });
  }

  /**
   * The `siteActions` port: a lifecycle action for a trusted caller (an approved agent action),
   * through the same lock as an API request; idempotent per `operationId`.
   */
  async runTrustedAction(request: SiteActionRequest): Promise<{ operationId: string }> {
    if (await this.deps.engine.get(request.operationId)) return { operationId: request.operationId };
    const site = await this.models.Site.findById(request.projectId).lean();
    if (!site || site.accountId !== request.accountId) throw conflict('site_not_found', 'the project has no publishing site');
    await this.deps.nodes.assertReachable(site);
    const previous = await this.locks.begin(site, request.action, request.operationId);
    await this.locks.withLock(site, request.operationId, previous, () =>
      this.deps.engine.enqueue({
        id: request.operationId,
        accountId: request.accountId,
        projectId: request.projectId,
        resourceType: 'site',
        resourceId: request.projectId,
        operationType: request.action,
        input: { runtimeVersion: site.runtimeVersion },
        initiator: request.initiator,
      }),
    );
    return { operationId: request.operationId };
  }

  /** Attaches a custom domain (replacing any other); it waits in `pending_verification` for DNS. */
  async setDomain(principal: Principal | null, projectId: string, domain: string): Promise<DomainView> {
    const p = this.access.writer(principal);
    return this.domains.attach(await this.access.site(p, projectId), domain);
  }

  /**
   * What a managed-database id stands for in the activity feeds: the site's lifecycle operations
   * (every one of them acts on its database) and agent actions keyed `database.*`.
   */
  async databaseScope(accountId: string, databaseId: string): Promise<ActivityScopeTarget | null> {
    const site = await this.models.Site.findOne({ databaseId, accountId }, { _id: 1 }).lean();
    return site ? { projectId: site._id, resourceTypes: ['site'], actionKeyPrefix: 'database.' } : null;
  }

  /** The sweeper's pass over unverified domains (index.ts runs it where workers run). */
  verifyPendingDomains(): Promise<number> {
    return this.domains.verifyPending();
  }

  async mailSettings(principal: Principal | null, projectId: string): Promise<MailSettingsView> {
    const p = this.access.reader(principal);
    return this.mail.view(await this.access.site(p, projectId));
  }

  async setMailSender(principal: Principal | null, projectId: string, senderEmail: string): Promise<MailSettingsView> {
    const p = this.access.writer(principal);
    const site = await this.access.site(p, projectId);
    return this.mail.view(await this.mail.setSender(site, senderEmail));
  }

  async setNewsletterProvider(
    principal: Principal | null,
    projectId: string,
    input: NewsletterProviderInput,
  ): Promise<MailSettingsView> {
    const p = this.access.writer(principal);
    const site = await this.access.site(p, projectId);
    await this.mail.setProvider(site, input);
    return this.mail.view(site);
  }

  async deleteNewsletterProvider(principal: Principal | null, projectId: string): Promise<MailSettingsView> {
    const p = this.access.writer(principal);
    const site = await this.access.site(p, projectId);
    await this.mail.deleteProvider(site);
    return this.mail.view(site);
  }
}
