import { randomUUID } from 'node:crypto';
import { PlatformError, badRequest, conflict, notFound } from '../../core/errors';
import type { IdempotencyStore } from '../../core/idempotency';
import { isUuid, newId } from '../../core/ids';
import { isDuplicateKey, insertOne } from '../../core/mongo';
import type { OperationEngine } from '../../core/operations/engine';
import type { OperationDoc } from '../../core/operations/model';
import type { ProjectDirectory } from '../../core/ports';
import type { Principal } from '../../core/principal';
import { type HostedSlots, SLEEPS_WHEN_IDLE } from './hosted-slots';
import { MAX_SITE_NAME_LENGTH } from './limits';
import type { PublisherModels, SiteDoc } from './model';
import { type ConnectedNodes, NODE_TAG } from '../../nodes/registry';
import { RUNTIME_CATALOG, defaultRuntime, findRuntime } from './runtime-catalog';
import type { SiteAccess } from './site-access';
import { enqueueSiteOperation } from './site-operations';

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

/** Ids a site creation fixes up front, so a retried create resumes with them. */
interface PlannedSite {
  projectId: string;
  operationId: string;
  /** Drawn just now for this request (no Idempotency-Key): no earlier operation can hold the id. */
  fresh?: boolean;
}

export interface SiteCreationDeps {
  models: PublisherModels;
  engine: OperationEngine;
  idempotency: IdempotencyStore;
  projects: () => ProjectDirectory;
  nodes: ConnectedNodes;
  slots: HostedSlots;
  access: SiteAccess;
  /** Domain hosted sites live under: https://<slug>.<sitesDomain>. */
  sitesDomain: string;
  /** A site's public address from its slug, without a trailing slash (default `https://<slug>.<sitesDomain>`). */
  siteUrl?: (slug: string) => string;
}

/**
 * Creating a site: validation against the catalog and the account's nodes, a plan slot for a hosted
 * site, the project and its site record, and the provisioning operation. With an Idempotency-Key
 * the ids are fixed at the first claim, so a retry after a crash resumes instead of creating twice.
 */
export class SiteCreation {
  private readonly access: SiteAccess;
  constructor(private readonly d: SiteCreationDeps) {
    this.access = d.access;
  }

  async createSite(principal: Principal | null, input: CreateSiteInput, idempotencyKey?: string | null): Promise<CreatedSite> {
    const p = this.access.writer(principal);
    if (!idempotencyKey) return this.provisionSite(p, input, { projectId: randomUUID(), operationId: randomUUID(), fresh: true });
    // The project and operation ids are fixed when the key is first claimed; a retry after a crash
    // resumes with the same ids (every step below is idempotent per id) instead of creating twice.
    const { value } = await this.d.idempotency.run(
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
    const operation = await this.d.engine.get(value.operation._id as string);
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
    const operation = await enqueueSiteOperation(
      this.d.engine,
      p,
      site._id,
      'provision',
      operationId,
      { runtimeVersion: spec.runtime.version, name: spec.name },
      site._id,
      { idIsNew: ids.fresh },
    );
    return { project: projectView(site), siteUrl: site.siteUrl, adminUrl: site.adminUrl, operation };
  }

  /**
   * A new project and its site record (provisioning, holding `activeOperationId`'s lock). A hosted
   * site takes a slot of the plan first (402 when none is left), given back if the site is not created.
   */
  async newSite(p: Principal, fields: NewSiteFields, siteId: string = randomUUID()): Promise<SiteDoc> {
    const hosted = fields.deploymentMode === 'hosted';
    if (hosted) await this.d.slots.reserve(p, siteId, fields.runtimeVersion);
    try {
      return await this.createSiteRecord(p, fields, siteId);
    } catch (e) {
      if (hosted) await this.d.slots.release(p.accountId, siteId);
      throw e;
    }
  }

  /** The project and its site record with id `siteId`; when both exist already (a resumed create), the stored site. */
  private async createSiteRecord(p: Principal, fields: NewSiteFields, siteId: string): Promise<SiteDoc> {
    const existing = await this.d.models.Site.findById(siteId).lean();
    if (existing) {
      if (existing.accountId !== p.accountId) throw conflict('site_id_conflict', 'a site with this id already exists');
      return existing;
    }
    const project = await this.d.projects().createProject(p.accountId, fields.name, RUNTIME_KIND, { id: siteId });
    const slug = `${slugify(fields.name)}-${project.id.slice(0, 6)}`;
    // The contract's addresses: `site_url` ends with `/`, `admin_url` is `site_url` + `ghost/` (Ghost's admin).
    // A connected node's site lives on that node's edge (docs/contracts.md, "the agent").
    const node =
      fields.deploymentMode === 'connected_node' && fields.targetNodeId ? await this.d.nodes.get(fields.targetNodeId) : null;
    const base = node ? this.d.nodes.siteUrl(node, slug) : (this.d.siteUrl?.(slug) ?? `https://${slug}.${this.d.sitesDomain}`);
    const siteUrl = `${base.replace(/\/+$/, '')}/`;
    const now = new Date();
    const doc: SiteDoc = {
      _id: project.id,
      accountId: p.accountId,
      slug,
      status: 'provisioning',
      siteUrl,
      adminUrl: `${siteUrl}ghost/`,
      environment: 'production',
      sourceProjectId: null,
      sourceRecoveryPointId: null,
      databaseId: newId(),
      domain: null,
      domainStatus: null,
      domainUpdatedAt: null,
      mailSenderEmail: null,
      sleepsWhenIdle: SLEEPS_WHEN_IDLE[p.plan],
      createdAt: now,
      updatedAt: now,
      ...fields,
      activeOperationAt: fields.activeOperationId ? now : null,
    };
    try {
      await insertOne(this.d.models.Site, doc);
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
      const raced = await this.d.models.Site.findById(siteId).lean();
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
    if (input.targetNodeId !== undefined && input.targetNodeId !== null && !isUuid(input.targetNodeId)) {
      throw badRequest('invalid_target_node', 'target_node_id must be the UUID of a connected node');
    }
    if (!input.targetNodeId && (tags.length === 0 || input.placementMode === 'manual')) {
      throw badRequest('invalid_target_node', 'a connected-node site needs target_node_id, or node_selector_tags to choose one');
    }
    if (input.placementMode && input.placementMode !== 'manual')
      throw badRequest('invalid_placement_mode', 'placement_mode must be `manual`');
    if (tags.length > 20) throw badRequest('invalid_node_selector_tags', 'at most 20 node_selector_tags');
    for (const t of tags) {
      if (!NODE_TAG.test(t)) throw badRequest('invalid_node_selector_tags', `tag "${t}" is not of the form <key>:<value>`);
    }
    // Manual placement names the node; without one the selector tags choose (nodes.ts, `choose`).
    const placementMode = input.targetNodeId ? 'manual' : 'selector';
    const node = input.targetNodeId
      ? await this.d.nodes.findForAccount(p.accountId, input.targetNodeId)
      : await this.d.nodes.choose(p.accountId, tags, (nodeId) =>
          this.d.models.Site.countDocuments({ targetNodeId: nodeId, status: { $ne: 'deleted' } }),
        );
    // A well-formed reference to nothing this account owns: 422 (the document's schema cannot say it).
    if (!node && input.targetNodeId) {
      throw new PlatformError('unknown_target_node', 422, 'target_node_id is not a connected node of this account');
    }
    if (!node) {
      throw conflict('no_eligible_node', 'no reachable, non-draining node of this account carries every selector tag', {
        node_selector_tags: tags,
      });
    }
    // A drained node takes no new sites.
    if (node.drainedAt) throw conflict('node_draining', 'the target node is draining and takes no new sites');
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
}

/** What a caller chooses of a new site; the rest (ids, addresses, state) `newSite` derives. */
export type NewSiteFields = Pick<
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

export const projectView = (site: SiteDoc): SiteProjectView => ({
  id: site._id,
  sourceType: RUNTIME_KIND,
  runtime: RUNTIME_KIND,
});

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
