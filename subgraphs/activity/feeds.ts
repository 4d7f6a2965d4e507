import type { FeedDefinition } from '../../core/area';
import type { Ports } from '../../core/ports';
import type { Principal } from '../../core/principal';
import { ACTIVITY_TOPICS, type ActivityUpdateEvent } from './events';

/**
 * graphql-ws feeds (docs/areas/activity.md): each update carries the item exactly as the REST reads show
 * it, to the subscribers of a scope the principal may read, as the REST reads decide it: a project
 * (`projectId`, or `scope: {type: project}`), or an application or database, which the area that
 * owns it places in its project (`core/activity-scopes.ts`). A scope the principal cannot read is
 * refused as not found. Objective scopes are read through REST only (see docs/areas/activity.md).
 */
const TYPES_SDL = [
  '"An activity item as the REST reads show it (contract v1)."\nscalar ActivityItemJSON',
  '"What a live activity feed follows."\nenum ActivityScopeType {\n  project\n  application\n  database\n}',
  '"A scope of the activity feeds: a project, or an application or database (optionally with the project it must belong to)."\ninput ActivityScopeInput {\n  type: ActivityScopeType!\n  id: ID!\n  projectId: ID\n}',
].join('\n\n');

type ScopeArg = { type: 'project' | 'application' | 'database'; id: string; projectId?: string | null };
type Args = { projectId?: string | null; scope?: ScopeArg | null };

/** The keys an update is routed by; subscriptions listen on the ones their scope selects. */
const projectKey = (projectId: string) => `project:${projectId}`;
const typeKey = (projectId: string, resourceType: string) => `project:${projectId}/type:${resourceType}`;
const actionsKey = (projectId: string, prefix: string) => `project:${projectId}/actions:${prefix}`;
const accountKey = (accountId: string) => `account:${accountId}`;

/** Operation items: their project, and their resource type within it (application and database scopes). */
function operationKeys(e: ActivityUpdateEvent): string[] | null {
  if (!e.projectId) return null;
  const type = (e.item.resource as { type?: unknown } | undefined)?.type;
  return typeof type === 'string' ? [projectKey(e.projectId), typeKey(e.projectId, type)] : [projectKey(e.projectId)];
}

/**
 * Agent actions: their project and every dotted prefix of their action key within it (the scope of
 * an application or database is its project's actions under one prefix, e.g. `database.`), or
 * their account when they are account-wide.
 */
function agentKeys(e: ActivityUpdateEvent): string[] | null {
  if (!e.projectId) return e.accountId ? [accountKey(e.accountId)] : null;
  const keys = [projectKey(e.projectId)];
  const actionKey = e.item.action_key;
  if (typeof actionKey === 'string') {
    for (let i = actionKey.indexOf('.'); i > 0; i = actionKey.indexOf('.', i + 1)) {
      keys.push(actionsKey(e.projectId, actionKey.slice(0, i + 1)));
    }
  }
  return keys;
}

/** The scope named by the arguments: exactly one of `projectId` and `scope`. */
function scopeOf(a: Args): ScopeArg | null {
  if (a.scope && a.projectId) return null;
  if (a.scope) return a.scope;
  return typeof a.projectId === 'string' ? { type: 'project', id: a.projectId } : null;
}

const canRead = (p: Principal, projectId: string, ports: Ports) => ports.get('projects').canAccessProject(p, projectId);

function feed(
  field: string,
  topic: string,
  description: string,
  keys: (e: ActivityUpdateEvent) => string[] | null,
  listen: {
    project: (p: Principal, projectId: string) => string[];
    target: (t: { projectId: string; resourceTypes: string[]; actionKeyPrefix: string }) => string[];
  },
): FeedDefinition<ActivityUpdateEvent, Args> {
  return {
    field,
    fieldSdl: `"${description}"\n  ${field}(projectId: ID, scope: ActivityScopeInput): ActivityItemJSON!`,
    typesSdl: TYPES_SDL,
    topic,
    keyOfEvent: keys,
    keyOfArgs: (a) => projectKey(String(a.projectId)),
    notFound: { code: 'activity_not_found', message: 'scope not found' },
    async authorize(p, a, ports) {
      const s = scopeOf(a);
      if (!s) return false;
      if (s.type === 'project') return (await canRead(p, s.id, ports)) ? listen.project(p, s.id) : false;
      const port = s.type === 'application' ? 'applicationScopes' : 'databaseScopes';
      if (!ports.has(port)) return false;
      const target = await ports.get(port).resolve(p.accountId, s.id);
      if (!target || (s.projectId && s.projectId !== target.projectId)) return false;
      return (await canRead(p, target.projectId, ports)) ? listen.target(target) : false;
    },
    toPayload: (e) => e.item,
    eventId: (e) => e.eventId,
  };
}

export const activityFeeds = [
  feed(
    'operationActivity',
    ACTIVITY_TOPICS.operationUpdates,
    'Operation-activity items of a scope (a project, application or database) as they change.',
    operationKeys,
    {
      project: (_p, projectId) => [projectKey(projectId)],
      target: (t) => t.resourceTypes.map((type) => typeKey(t.projectId, type)),
    },
  ),
  feed(
    'agentActivity',
    ACTIVITY_TOPICS.agentUpdates,
    "Agent actions of a scope (a project, with its account's account-wide actions; an application or database) as they change.",
    agentKeys,
    {
      // As the REST read: a project's feed also lists its account's account-wide actions.
      project: (p, projectId) => [projectKey(projectId), accountKey(p.accountId)],
      target: (t) => [actionsKey(t.projectId, t.actionKeyPrefix)],
    },
  ),
];
