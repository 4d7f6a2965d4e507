import type { Connection } from 'mongoose';
import { randomUUID } from 'node:crypto';
import { badRequest, conflict, forbidden, notFound, paymentRequired } from '../../core/errors';
import { IdempotencyStore, isDuplicateKey } from '../../core/idempotency';
import { isUuid } from '../../core/ids';
import type { OperationEngine } from '../../core/operations/engine';
import type { OperationDoc } from '../../core/operations/model';
import { canWrite, type Plan, type Principal } from '../../core/principal';
import type { IdentityService } from '../identity/service';
import { registerSiteExecutors } from './executors';
import { type PublisherModels, type SiteDoc, publisherModels } from './model';
import { ConnectedNodes, NODE_TAG } from './nodes';
import { RUNTIME_CATALOG, defaultRuntime, findRuntime, type RuntimeOption } from './runtime-catalog';

/** Hosted sites an account may run, by plan (the `free` plan allows one). */
export const HOSTED_SITE_LIMIT: Record<Plan, number> = { free: 1, pro: 100 };
export const SITE_ACTIONS = ['restart', 'start', 'stop', 'retry_provisioning'] as const;
export type SiteAction = (typeof SITE_ACTIONS)[number];
/** What the publishing runtime is, as reported in `project.source_type` and `project.runtime`. */
export const RUNTIME_KIND = 'publisher';
const TERMINAL = new Set(['completed', 'failed']);

/** What users see of a site's state: the stored state, corrected by a failed active operation. */
export type SiteStatus = 'provisioning' | 'running' | 'stopped' | 'provision_failed';

export interface CreateSiteInput {
  name?: string | null;
  runtimeVersion?: string | null;
  deploymentMode?: string | null;
  targetNodeId?: string | null;
  placementMode?: string | null;
  nodeSelectorTags?: string[] | null;
  mailEnabled?: boolean | null;
}

export interface CreatedSite {
  project: { id: string; sourceType: string; runtime: string };
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
  mail: { enabled: boolean; transactionalConfigured: boolean; newsletterProviderConfigured: boolean };
}

export interface PublisherDeps {
  conn: Connection;
  identity: IdentityService;
  engine: OperationEngine;
  nodes: ConnectedNodes;
  /** Domain hosted sites live under: https://<slug>.<sitesDomain>. */
  sitesDomain: string;
  /** The publishing feature for this environment; when off every route answers 404. */
  features: { publisherEnabled: boolean };
  infra: import('./simulated-infrastructure').SimulatedInfrastructure;
}

/** The publishing area's rules: catalog, sites, lifecycle operations, plan gates, access. */
export class PublisherService {
  readonly models: PublisherModels;
  private readonly idempotency: IdempotencyStore;

  constructor(private readonly deps: PublisherDeps) {
    this.models = publisherModels(deps.conn);
    this.idempotency = new IdempotencyStore(deps.conn);
    registerSiteExecutors(deps.engine, { models: this.models, infra: deps.infra });
  }

  runtimeOptions(principal: Principal | null): readonly RuntimeOption[] {
    this.reader(principal);
    return RUNTIME_CATALOG;
  }

  async createSite(principal: Principal | null, input: CreateSiteInput, idempotencyKey?: string | null): Promise<CreatedSite> {
    const p = this.writer(principal);
    if (!idempotencyKey) return this.provisionSite(p, input);
    const { value } = await this.idempotency.run(`publisher.sites:${p.accountId}`, idempotencyKey, input, async () => {
      const created = await this.provisionSite(p, input);
      return { ...created, operation: { _id: created.operation._id } };
    });
    const operation = await this.deps.engine.get(value.operation._id as string);
    if (!operation) throw notFound('operation_not_found', 'operation not found');
    return { ...value, operation };
  }

  private async provisionSite(p: Principal, input: CreateSiteInput): Promise<CreatedSite> {
    const spec = await this.validateCreate(p, input);
    if (spec.deploymentMode === 'hosted') await this.reserveHostedSite(p);
    const project = await this.deps.identity.createProject(p.accountId, spec.name, RUNTIME_KIND);
    const slug = `${slugify(spec.name)}-${project._id.slice(0, 6)}`;
    const siteUrl = `https://${slug}.${this.deps.sitesDomain}`;
    const operationId = randomUUID();
    const now = new Date();
    await this.models.Site.create({
      _id: project._id,
      accountId: p.accountId,
      name: spec.name,
      slug,
      runtimeVersion: spec.runtime.version,
      deploymentMode: spec.deploymentMode,
      targetNodeId: spec.targetNodeId,
      placementMode: spec.placementMode,
      nodeSelectorTags: spec.nodeSelectorTags,
      mailEnabled: spec.mailEnabled,
      status: 'provisioning',
      siteUrl,
      adminUrl: `${siteUrl}/admin/`,
      domain: null,
      activeOperationId: operationId,
      createdAt: now,
      updatedAt: now,
    });
    const operation = await this.enqueue(p, project._id, 'provision', operationId, { runtimeVersion: spec.runtime.version, name: spec.name });
    return {
      project: { id: project._id, sourceType: RUNTIME_KIND, runtime: RUNTIME_KIND },
      siteUrl,
      adminUrl: `${siteUrl}/admin/`,
      operation,
    };
  }

  private async validateCreate(p: Principal, input: CreateSiteInput) {
    const name = (input.name ?? '').trim();
    if (!name) throw badRequest('invalid_name', 'name is required');
    if (name.length > 63) throw badRequest('invalid_name', 'name must be at most 63 characters');
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
        throw badRequest('invalid_deployment_mode', 'target_node_id, placement_mode and node_selector_tags are only used with connected_node');
      }
      return { name, runtime, deploymentMode, targetNodeId: null, placementMode: null, nodeSelectorTags: [], mailEnabled: Boolean(input.mailEnabled) } as const;
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
    if (!node) throw badRequest('unknown_target_node', 'target_node_id is not a connected node of this account');
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
  private async reserveHostedSite(p: Principal): Promise<void> {
    const limit = HOSTED_SITE_LIMIT[p.plan];
    try {
      const updated = await this.models.SiteQuota.findOneAndUpdate(
        { _id: p.accountId, hostedSites: { $lt: limit } },
        { $inc: { hostedSites: 1 } },
        { upsert: true, new: true },
      );
      if (updated) return;
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
    }
    throw paymentRequired('plan_limit_reached', `the ${p.plan} plan allows ${limit} hosted site${limit === 1 ? '' : 's'}`, {
      plan: p.plan,
      limit,
    });
  }

  async getOperation(principal: Principal | null, projectId: string, operationId: string): Promise<OperationDoc> {
    const p = this.reader(principal);
    await this.site(p, projectId);
    const op = isUuid(operationId) ? await this.deps.engine.get(operationId) : null;
    if (!op || op.projectId !== projectId) throw notFound('operation_not_found', 'operation not found');
    return op;
  }

  async siteForProject(principal: Principal | null, projectId: string): Promise<{ site: SiteDoc; status: SiteStatus } | null> {
    if (!principal || !this.deps.features.publisherEnabled) return null;
    const site = await this.models.Site.findById(projectId).lean();
    if (!site || site.accountId !== principal.accountId) return null;
    return { site, status: (await this.state(site)).status };
  }

  async metadata(principal: Principal | null, projectId: string): Promise<SiteMetadata> {
    const p = this.reader(principal);
    const site = await this.site(p, projectId);
    const project = await this.deps.identity.findProject(projectId);
    const { status, activeOperation } = await this.state(site);
    const runtime = findRuntime(site.runtimeVersion) ?? defaultRuntime();
    return {
      installation: {
        runtimeVersion: site.runtimeVersion,
        runtimeLabel: runtime.label,
        image: runtime.image,
        digest: runtime.digest,
        status,
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
      activeOperation: activeOperation && !TERMINAL.has(activeOperation.status) ? activeOperation : null,
      mail: { enabled: site.mailEnabled, transactionalConfigured: false, newsletterProviderConfigured: false },
    };
  }

  /** Lifecycle actions, allowed only where they make sense; one lifecycle operation per site at a time. */
  async action(principal: Principal | null, projectId: string, action: string): Promise<OperationDoc> {
    const p = this.writer(principal);
    if (!(SITE_ACTIONS as readonly string[]).includes(action)) {
      throw badRequest('invalid_action', `action must be one of ${SITE_ACTIONS.join(', ')}`);
    }
    const site = await this.site(p, projectId);
    const { status, activeOperation } = await this.state(site);
    if (activeOperation && !TERMINAL.has(activeOperation.status)) throw this.busy(activeOperation);
    const allowed: Record<SiteAction, SiteStatus[]> = {
      restart: ['running'],
      stop: ['running'],
      start: ['stopped'],
      retry_provisioning: ['provision_failed'],
    };
    if (!allowed[action as SiteAction].includes(status)) {
      throw conflict('invalid_site_state', `cannot ${action.replace('_', ' ')} a site that is ${status.replace('_', ' ')}`, {
        action,
        site_status: status,
      });
    }
    const operationType = action === 'retry_provisioning' ? 'provision' : action;
    const operationId = randomUUID();
    await this.lock(site, operationId, activeOperation);
    return this.enqueue(p, projectId, operationType, operationId, { runtimeVersion: site.runtimeVersion });
  }

  /** Takes the site's lifecycle lock for a new operation, or answers 409 with the one holding it. */
  private async lock(site: SiteDoc, operationId: string, current: OperationDoc | null): Promise<void> {
    const taken = await this.models.Site.findOneAndUpdate(
      { _id: site._id, activeOperationId: current ? current._id : site.activeOperationId },
      { $set: { activeOperationId: operationId, updatedAt: new Date() } },
    );
    if (taken) return;
    const fresh = await this.models.Site.findById(site._id).lean();
    const holder = fresh?.activeOperationId ? await this.deps.engine.get(fresh.activeOperationId) : null;
    throw this.busy(holder);
  }

  private busy(holder: OperationDoc | null) {
    return conflict('operation_in_progress', 'another lifecycle operation is running on this site', {
      operation_id: holder?._id ?? null,
      operation_type: holder?.operationType ?? null,
    });
  }

  private enqueue(p: Principal, projectId: string, operationType: string, id: string, input: Record<string, unknown>) {
    return this.deps.engine.enqueue({
      id,
      accountId: p.accountId,
      projectId,
      resourceType: 'site',
      resourceId: projectId,
      operationType,
      input,
      initiator: { type: 'api_key', id: p.keyId },
    });
  }

  private async state(site: SiteDoc): Promise<{ status: SiteStatus; activeOperation: OperationDoc | null }> {
    const activeOperation = site.activeOperationId ? await this.deps.engine.get(site.activeOperationId) : null;
    const failedProvision =
      site.status === 'provisioning' && (!activeOperation || (activeOperation.operationType === 'provision' && activeOperation.status === 'failed'));
    return { status: failedProvision ? 'provision_failed' : site.status, activeOperation };
  }

  /** The principal's site for a project; a missing or foreign one is concealed as 404. */
  private async site(p: Principal, projectId: string): Promise<SiteDoc> {
    const site = isUuid(projectId) ? await this.models.Site.findById(projectId).lean() : null;
    if (!site || site.accountId !== p.accountId) throw notFound('project_not_found', 'project not found');
    return site;
  }

  private reader(principal: Principal | null): Principal {
    const p = this.deps.identity.requirePrincipal(principal);
    if (!this.deps.features.publisherEnabled) throw notFound('publisher_disabled', 'publishing is not enabled in this environment');
    return p;
  }

  private writer(principal: Principal | null): Principal {
    const p = this.reader(principal);
    if (!canWrite(p)) throw forbidden('read_only_key', 'this key is read-only and cannot change anything');
    return p;
  }
}

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
