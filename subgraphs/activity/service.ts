import '../../core/site-actions';
import { agentActionPerformers } from '../../core/agent-actions';
import type { ActivityScopeTarget } from '../../core/activity-scopes';
import type { ActivityRecord, ActivitySource } from '../../core/activity-source';
import type { EventBus } from '../../core/events/event-bus';
import { PlatformError, badRequest } from '../../core/errors';
import type { Logger } from '../../core/logger';
import { OPERATION_SOURCE_KIND, operationActivitySource } from '../../core/operations/activity-source';
import type { OperationEngine } from '../../core/operations/engine';
import type { Ports } from '../../core/ports';
import { type Principal, requirePrincipal } from '../../core/principal';
import { AgentActions, ContinuationUnavailable, type ActInput, type ApprovalMode } from './agent-actions';
import { ACTIVITY_TOPICS, type ActivityUpdateEvent } from './events';
import { type ActivityItemDoc, type ActivityModels, type AgentActionDoc, activityModels } from './model';
import { project } from './projection';
import { SourceHealth } from './source-health';
import {
  type Scope,
  actionPage,
  cappedActions,
  checkId,
  checkItemId,
  currentItems,
  itemPage,
  notFoundActivity,
  parseCursor,
  parseLimit,
  scopeView,
} from './reads';
import { AGENT_SOURCE_KIND, CONTRACT_VERSION, agentItem, approvalView, operationItem } from './views';

export interface ActivityDeps {
  conn: import('mongoose').Connection;
  bus: EventBus;
  engine: OperationEngine;
  ports: Ports;
  log: Logger;
  /** Physical topic name of `name` under the prefix in force. */
  topicOf(name: string): string;
}

export interface ListQuery {
  limit?: unknown;
  cursor?: unknown;
}

const sourcesUnavailable = (data: unknown) =>
  new PlatformError('activity_sources_unavailable', 503, 'no activity source could answer', { data });
const accessUnavailable = () =>
  new PlatformError('activity_access_unavailable', 503, 'access to the resource could not be checked');

/** The activity area's rules: projections in, contract-v1 reads and decisions out. */
export class ActivityService {
  readonly models: ActivityModels;
  readonly actions: AgentActions;
  readonly health: SourceHealth;

  constructor(private readonly d: ActivityDeps) {
    this.models = activityModels(d.conn);
    this.health = new SourceHealth(this.models);
    this.actions = new AgentActions({
      models: this.models,
      engine: d.engine,
      siteActions: () => d.ports.get('siteActions'),
      performers: () => agentActionPerformers(d.ports),
      changed: (a) => this.publishAgent(a),
    });
  }

  /** The kernel's operations source and every area's declared sources, once per kind. */
  sources(): ActivitySource[] {
    const declared = this.d.ports.has('activitySources') ? this.d.ports.get('activitySources') : [];
    const all = [operationActivitySource as ActivitySource, ...declared];
    return all.filter((s, i) => all.findIndex((t) => t.sourceKind === s.sourceKind) === i);
  }

  /** Consumer handler: projects one event of `source` and streams the item when it changed. */
  async consume(source: ActivitySource, event: unknown): Promise<void> {
    let applied;
    try {
      // The enqueue event names its initiator (null included); only an item first seen through a
      // later event (or an event from before events carried it) reads the operation.
      const named = event !== null && typeof event === 'object' && 'initiator' in event;
      applied = await project(this.models, source, event, named ? undefined : (r) => this.withInitiator(r));
    } catch (e) {
      await this.health.failed(source.sourceKind, e);
      throw e;
    }
    if (applied) await this.health.applied(source.sourceKind, applied.doc.updatedAt);
    if (!applied?.changed) return;
    const doc = applied.doc;
    const update: ActivityUpdateEvent = {
      eventId: `${doc._id}@${doc.version}`,
      accountId: doc.accountId,
      projectId: doc.projectId,
      item: operationItem(doc),
    };
    await this.d.bus.publish([
      { topic: this.d.topicOf(ACTIVITY_TOPICS.operationUpdates), key: doc.projectId ?? doc._id, value: update },
    ]);
  }

  /**
   * Who started an operation, for an item first projected from an event that does not name it: read
   * from the operation once. It never changes, so a replay still equals the live projection.
   */
  private async withInitiator(r: ActivityRecord): Promise<ActivityRecord> {
    if (r.sourceKind !== OPERATION_SOURCE_KIND) return r;
    const op = await this.d.engine.get(r.sourceId);
    return { ...r, initiator: op?.initiator ?? null };
  }

  private async publishAgent(a: AgentActionDoc): Promise<void> {
    const update: ActivityUpdateEvent = {
      eventId: `${AGENT_SOURCE_KIND}:${a._id}@${a.updatedAt.getTime()}:${a.status}:${a.continuation}`,
      accountId: a.accountId,
      projectId: a.projectId,
      item: agentItem(a, { reader: null, now: new Date() }),
    };
    await this.d.bus
      .publish([{ topic: this.d.topicOf(ACTIVITY_TOPICS.agentUpdates), key: a.projectId ?? a.accountId, value: update }])
      .catch((e) => this.d.log.warn({ err: e }, 'agent activity update not streamed'));
  }

  private async canAccessProject(p: Principal, projectId: string): Promise<boolean> {
    try {
      return await this.d.ports.get('projects').canAccessProject(p, projectId);
    } catch {
      throw accessUnavailable();
    }
  }

  /** Authorises the scope (404 when missing, unrelated or inaccessible); returns the item filter. */
  private async itemFilter(p: Principal, s: Scope): Promise<Record<string, unknown>> {
    checkId(s.id, `${s.type} id`);
    if (s.projectId) checkId(s.projectId, 'project id');
    if (s.type === 'project') {
      if (!(await this.canAccessProject(p, s.id))) throw notFoundActivity('project');
      return { accountId: p.accountId, projectId: s.id };
    }
    if (s.type === 'objective') {
      const actions = await this.models.Action.find(
        { accountId: p.accountId, objectiveId: s.id },
        { projectId: 1, operations: 1 },
      )
        .lean<AgentActionDoc[]>()
        .exec();
      const visible: AgentActionDoc[] = [];
      for (const a of actions) if (a.projectId === null || (await this.canAccessProject(p, a.projectId))) visible.push(a);
      if (visible.length === 0) throw notFoundActivity('objective');
      return { accountId: p.accountId, _id: { $in: visible.flatMap((a) => a.operations.map((o) => o.activityId)) } };
    }
    const target = await this.scopeTarget(p, s);
    if (target) {
      return { accountId: p.accountId, projectId: target.projectId, resourceType: { $in: target.resourceTypes } };
    }
    // Without an area answering for them, applications and databases are known by recorded activity.
    const filter: Record<string, unknown> = { accountId: p.accountId, resourceKey: `${s.type}:${s.id}` };
    if (s.projectId) {
      if (!(await this.canAccessProject(p, s.projectId))) throw notFoundActivity('project');
      filter.projectId = s.projectId;
    }
    const any = await this.models.Item.findOne(filter, { projectId: 1 }).lean<ActivityItemDoc>().exec();
    if (!any || (any.projectId && !(await this.canAccessProject(p, any.projectId)))) throw notFoundActivity(s.type);
    return filter;
  }

  /**
   * `availability` of an operation-activity read: every source with its role, state and health
   * (last event, lag, last error). A source whose latest attempt failed is still `available` (its
   * projection answers, as of its last event) but makes the read incomplete.
   */
  private async availability(state: 'available' | 'unavailable') {
    const kinds = this.sources().map((s) => s.sourceKind);
    const health = state === 'available' ? await this.health.read(kinds).catch(() => null) : null;
    const sources = kinds.map((kind) => ({
      source_kind: kind,
      role: 'operations',
      state,
      health: health ? health.get(kind)! : null,
    }));
    return { sources, complete: state === 'available' && sources.every((s) => s.health?.status !== 'failing') };
  }

  async operationActivity(principal: Principal | null, scope: Scope, q: ListQuery) {
    const p = requirePrincipal(principal);
    const limit = parseLimit(q.limit);
    const binding = `operation-activity:${scope.type}:${scope.id}`;
    const cursor = parseCursor(q.cursor, binding);
    const filter = await this.itemFilter(p, scope);
    const observedAt = new Date().toISOString();
    try {
      const [current, page] = await Promise.all([
        currentItems(this.models, filter),
        itemPage(this.models, filter, limit, cursor, binding),
      ]);
      return {
        contract_version: CONTRACT_VERSION,
        scope: scopeView(scope),
        observed_at: observedAt,
        current: current.items.map(operationItem),
        current_complete: current.complete,
        history: {
          items: page.items.map(operationItem),
          limit,
          complete: !page.hasMore,
          has_more: page.hasMore,
          next_cursor: page.nextCursor,
        },
        availability: await this.availability('available'),
        unresolved_references: [],
        ...(current.complete ? {} : { read_limit_exceeded: true }),
      };
    } catch (e) {
      if (e instanceof PlatformError) throw e;
      this.d.log.warn({ err: e }, 'operation activity read failed');
      throw sourcesUnavailable({
        contract_version: CONTRACT_VERSION,
        scope: scopeView(scope),
        observed_at: observedAt,
        current: [],
        current_complete: false,
        history: { items: [], limit, complete: false, has_more: false, next_cursor: null },
        availability: await this.availability('unavailable'),
        unresolved_references: [],
      });
    }
  }

  async operationActivityItem(principal: Principal | null, scope: Scope, activityId: string) {
    const p = requirePrincipal(principal);
    checkItemId(activityId);
    const filter = await this.itemFilter(p, scope);
    const doc = await this.models.Item.findOne({ $and: [filter, { _id: activityId }] })
      .lean<ActivityItemDoc>()
      .exec();
    if (!doc) throw notFoundActivity();
    return {
      contract_version: CONTRACT_VERSION,
      scope: scopeView(scope),
      observed_at: new Date().toISOString(),
      item: operationItem(doc),
    };
  }

  /** Agent activity exists per project (actions act on projects); other scopes hold none yet. */
  /**
   * An application or database scope as the owning area describes it (`core/activity-scopes.ts`):
   * null when no area answers for that kind; 404 when the id is unknown in the account, its project
   * is not visible to the key, or the project-database route names another project.
   */
  private async scopeTarget(p: Principal, s: Scope): Promise<ActivityScopeTarget | null> {
    const port = s.type === 'application' ? 'applicationScopes' : s.type === 'database' ? 'databaseScopes' : null;
    if (!port || !this.d.ports.has(port)) return null;
    const target = await this.d.ports.get(port).resolve(p.accountId, s.id);
    if (!target || (s.projectId && s.projectId !== target.projectId) || !(await this.canAccessProject(p, target.projectId))) {
      throw notFoundActivity(s.type);
    }
    return target;
  }

  private async actionFilter(p: Principal, scope: Scope) {
    checkId(scope.id, `${scope.type} id`);
    if (scope.projectId) checkId(scope.projectId, 'project id');
    const target = scope.type === 'application' || scope.type === 'database' ? await this.scopeTarget(p, scope) : null;
    if (target) {
      await this.actions.expireDue(p.accountId, target.projectId);
      // A prefix as a range (`database.` ≤ key < `database/`): every engine answers it, no regex.
      const prefix = target.actionKeyPrefix;
      const after = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
      return { accountId: p.accountId, projectId: target.projectId, actionKey: { $gte: prefix, $lt: after } };
    }
    if (scope.type !== 'project' || !(await this.canAccessProject(p, scope.id))) throw notFoundActivity(scope.type);
    // A project's feed also lists its account's account-wide actions (e.g. Assets tool calls, whose
    // buckets belong to the account): whoever reads a project of the account sees what may act on it.
    const projectId = { $in: [scope.id, null] };
    await this.actions.expireDue(p.accountId, projectId);
    return { accountId: p.accountId, projectId };
  }

  async agentActivity(principal: Principal | null, scope: Scope, q: ListQuery) {
    const p = requirePrincipal(principal);
    const limit = parseLimit(q.limit);
    const binding = `agent-activity:${scope.type}:${scope.id}`;
    const cursor = parseCursor(q.cursor, binding);
    const filter = await this.actionFilter(p, scope);
    const now = new Date();
    const viewer = { reader: p, now };
    const [pending, current, page] = await Promise.all([
      cappedActions(this.models, { ...filter, status: 'pending_approval' }),
      cappedActions(this.models, { ...filter, status: { $ne: 'pending_approval' } }),
      actionPage(this.models, filter, limit, cursor, binding),
    ]);
    return {
      contract_version: CONTRACT_VERSION,
      scope: scopeView(scope),
      observed_at: now.toISOString(),
      pending: pending.items.map((a) => agentItem(a, viewer)),
      pending_complete: pending.complete,
      current: current.items.map((a) => agentItem(a, viewer)),
      current_complete: current.complete,
      history: {
        items: page.items.map((a) => agentItem(a, viewer)),
        limit,
        complete: !page.hasMore,
        has_more: page.hasMore,
        next_cursor: page.nextCursor,
      },
      availability: { sources: [{ source_kind: AGENT_SOURCE_KIND, role: 'actions', state: 'available' }], complete: true },
    };
  }

  async agentActivityItem(principal: Principal | null, scope: Scope, actionId: string) {
    const p = requirePrincipal(principal);
    const { kind, uuid } = checkItemId(actionId);
    const filter = await this.actionFilter(p, scope);
    const a =
      kind === AGENT_SOURCE_KIND
        ? await this.models.Action.findOne({ ...filter, _id: uuid })
            .lean<AgentActionDoc>()
            .exec()
        : null;
    if (!a) throw notFoundActivity('action');
    return {
      contract_version: CONTRACT_VERSION,
      scope: scopeView(scope),
      observed_at: new Date().toISOString(),
      item: agentItem(a, { reader: p, now: new Date() }),
    };
  }

  /** `POST /agents/approvals/{id}/decision`: the flat approval with its continuation. */
  async decide(
    principal: Principal | null,
    approvalId: string,
    body: { decision: string; action_hash: string; note?: string | null },
  ) {
    const p = requirePrincipal(principal);
    if (body.decision !== 'approved' && body.decision !== 'denied')
      throw badRequest('invalid_decision', 'decision must be approved or denied');
    const view = (a: AgentActionDoc) => ({
      ...approvalView(a, { reader: p, now: new Date() }),
      continuation: {
        status: a.continuation,
        action_id: `${AGENT_SOURCE_KIND}:${a._id}`,
        action_status: a.status,
        operations: agentItem(a, { reader: null, now: new Date() }).operations,
      },
    });
    try {
      return view(
        await this.actions.decide(
          p,
          approvalId,
          { decision: body.decision, actionHash: body.action_hash, note: body.note },
          (id) => this.canAccessProject(p, id),
        ),
      );
    } catch (e) {
      if (!(e instanceof ContinuationUnavailable)) throw e;
      const recorded = await this.models.Action.findOne({ approvalId, accountId: p.accountId }).lean<AgentActionDoc>().exec();
      throw new PlatformError(
        'approval_continuation_unavailable',
        503,
        'the decision is recorded; its continuation could not be confirmed, retry the same decision',
        {
          approval: recorded ? view(recorded) : null,
          retryable: true,
        },
      );
    }
  }

  /** `platform agents act` (docs/contracts.md). */
  async act(input: Omit<ActInput, 'accountId'> & { accountSlug: string; approval?: ApprovalMode }) {
    const projects = this.d.ports.get('projects');
    const account = await projects.ensureAccount(input.accountSlug);
    const proj = isUuidish(input.projectId) ? await projects.findProject(input.projectId) : null;
    if (!proj || proj.accountId !== account.id) throw badRequest('project_not_found', 'the project is not one of this account');
    const a = await this.actions.act({ ...input, accountId: account.id });
    return {
      action_id: `${AGENT_SOURCE_KIND}:${a._id}`,
      approval_id: a.approvalId,
      action_hash: a.actionHash,
      objective_id: a.objectiveId,
    };
  }
}

const isUuidish = (s: string) => /^[0-9a-f-]{36}$/i.test(s);
