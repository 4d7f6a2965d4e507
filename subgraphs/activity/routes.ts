import { z } from 'zod';
import { queryInt } from '../../core/query-int';
import { type AnyRoute, pathParams, route } from '../../core/rest-route';
import { MAX_LIMIT } from './reads';

/**
 * REST rows of spec 4.6 and 4.7. Lists take only `limit` and `cursor`, each once (a repeated one
 * arrives as an array and fails the string schema); exact reads take no query at all.
 */
const tag = 'Activity';
const listQuery = z.object({ limit: queryInt(1, MAX_LIMIT).optional(), cursor: z.string().min(1).optional() }).strict();
const exactQuery = z.object({}).strict();
/**
 * Spec 7.5: a malformed path id is a 400. Scope ids are UUIDs as `isUuid` (core/ids.ts) reads them
 * (versions 1–8, RFC 4122 variant), item ids `<source_kind>:<UUID>` (`checkItemId`).
 */
const UUID_RE = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}';
const uuid = z.string().regex(new RegExp(`^${UUID_RE}$`));
const itemId = z.string().regex(new RegExp(`^[a-z][a-z0-9_]*:${UUID_RE}$`));
const pathSchema = (path: string) =>
  z.object(
    Object.fromEntries(pathParams(path).map((n) => [n, n === 'activityID' || n === 'actionID' ? itemId : uuid])),
  ) as unknown as z.ZodType<Record<string, string>>;

/**
 * A feed's scope: its path's last parameter is the operation's `id`, a `{projectID}` before it its
 * `projectId` (by rule; null when the path names none), the item's own parameter its `activityId` or
 * `actionId` (by rule).
 */
interface ScopePath {
  /** Path under `/api/v1` before the feed word. */
  path: string;
  scope: 'project' | 'application' | 'database' | 'objective';
}

const SCOPES: ScopePath[] = [
  { path: '/projects/{projectID}', scope: 'project' },
  { path: '/applications/{appID}', scope: 'application' },
  { path: '/databases/{databaseID}', scope: 'database' },
  { path: '/projects/{projectID}/databases/{databaseID}', scope: 'database' },
  { path: '/agents/objectives/{objectiveID}', scope: 'objective' },
];

function feedRoutes(feed: 'operation-activity' | 'agent-activity', s: ScopePath): AnyRoute[] {
  const op = feed === 'operation-activity' ? 'operationActivity' : 'agentActivity';
  const base = `/api/v1${s.path}/${feed}`;
  const fixed = { scope: s.scope, projectId: null };
  return [
    route({
      method: 'GET',
      path: base,
      summary: `${feed === 'operation-activity' ? 'Operation' : 'Agent'} activity of a ${s.scope} (contract v1)`,
      tag,
      operation: feed,
      query: listQuery,
      params: pathSchema(base),
      errors: [404],
      derive: { query: '.', params: 'id', fixed },
      // The feed's `limit` argument is a string (contract v1).
      variables: (r) => ({ limit: r.query.limit === undefined ? null : String(r.query.limit) }),
      select: (d) => d[op],
      status: 200,
      envelope: 'standard',
    }),
    route({
      method: 'GET',
      path: `${base}/{${feed === 'operation-activity' ? 'activityID' : 'actionID'}}`,
      summary: `One ${feed === 'operation-activity' ? 'operation-activity item' : 'agent action'} (no query accepted)`,
      tag,
      operation: `${feed}-item`,
      query: exactQuery,
      params: pathSchema(`${base}/{${feed === 'operation-activity' ? 'activityID' : 'actionID'}}`),
      errors: [404],
      derive: { params: { [pathParams(s.path).pop() as string]: 'id' }, fixed },
      select: (d) => d[`${op}Item`],
      status: 200,
      envelope: 'standard',
    }),
  ];
}

const decisionBody = z
  .object({
    decision: z.enum(['approved', 'denied']),
    action_hash: z.string().min(1).max(200),
    note: z.string().max(2000).nullable().optional(),
  })
  .strict();

export const activityRoutes: AnyRoute[] = [
  ...SCOPES.flatMap((s) => feedRoutes('operation-activity', s)),
  // There is no objective-scoped agent-activity feed (spec 4.7).
  ...SCOPES.filter((s) => s.scope !== 'objective').flatMap((s) => feedRoutes('agent-activity', s)),
  route({
    method: 'POST',
    path: '/api/v1/agents/approvals/{approvalID}/decision',
    summary: 'Record a decision on an approval, or send its projected recovery request; owns the continuation',
    tag,
    operation: 'decide-approval',
    body: decisionBody,
    params: pathSchema('/{approvalID}'),
    // 404 unknown approval; 409 hash changed, another decision recorded, withheld or withdrawn; 410 expired (spec 7.5).
    errors: [404, 409, 410],
    derive: { body: '.', params: '.' },
    select: (d) => d.decideApproval,
    status: 200,
    envelope: 'standard',
  }),
];
