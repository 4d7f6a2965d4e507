import type { Principal } from '../../core/principal';
import { mayDecide } from '../../core/decision-rights';
import type { ActivityItemDoc, AgentActionDoc } from './model';

/**
 * The item shapes of the feeds (spec 2.6, 2.7), shared by the REST reads and the graphql-ws feeds.
 * Unknown nullable values stay null; arrays stay arrays.
 */

export const CONTRACT_VERSION = 1;
export const AGENT_SOURCE_KIND = 'agent_tool_execution';

/** Action keys whose decision and recovery capabilities are withheld (spec 4.7 rule 3). */
export const WITHHELD_ACTION_KEYS = new Set([
  'application.manifest.apply',
  'application.manifest.prune',
  'application.release.create',
  'application.release.retry',
  'application.release.rollback',
  'application.release.cancel',
]);

const iso = (d: Date | string | null | undefined): string | null => (d ? new Date(d).toISOString() : null);

export const decisionPath = (approvalId: string) => `/api/v1/agents/approvals/${approvalId}/decision`;

/** Read links the caller may follow (only routes that check the same project access). */
function operationLinks(d: ActivityItemDoc): { rel: string; href: string }[] {
  if (d.resourceType === 'site' && d.projectId) {
    return [{ rel: 'operation', href: `/api/v1/publisher/projects/${d.projectId}/operations/${d.sourceId}` }];
  }
  return [];
}

/** Who started it, as the operation recorded it (`{type, id}`), and the channel that implies. */
function initiatorOf(d: ActivityItemDoc) {
  const i = d.initiator as { type?: unknown; id?: unknown; objective_id?: unknown } | null;
  if (!i || typeof i.type !== 'string') return { initiator: null, channel: null, parents: [] };
  const initiator = { type: i.type, id: typeof i.id === 'string' ? i.id : null };
  if (i.type === AGENT_SOURCE_KIND && initiator.id) {
    return {
      initiator,
      channel: 'agent',
      parents: [
        { type: AGENT_SOURCE_KIND, activity_id: `${AGENT_SOURCE_KIND}:${initiator.id}`, objective_id: i.objective_id ?? null },
      ],
    };
  }
  return { initiator, channel: i.type === 'api_key' ? 'api' : null, parents: [] };
}

/** Which state a task is in: every task but the last is done; the last shares the item's state. */
const LAST_TASK_STATE: Record<string, string> = {
  queued: 'queued',
  running: 'running',
  waiting: 'waiting',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
  rolled_back: 'failed',
  unknown: 'unknown',
};

function tasksOf(d: ActivityItemDoc) {
  const tasks = d.tasks ?? [];
  return tasks.map((t, i) => ({
    id: `${d._id}/${t.name}`,
    name: t.name,
    status: i < tasks.length - 1 ? 'completed' : (LAST_TASK_STATE[d.status] ?? 'unknown'),
    started_at: t.firstAt,
    updated_at: t.lastAt,
  }));
}

/**
 * Resources the item is about besides its own: the project it belongs to (when the resource is
 * not the project itself) and whatever the source declared in `extra.related`.
 */
function relatedOf(d: ActivityItemDoc) {
  const out: { type: string; id: string; relation: string }[] = [];
  if (d.projectId && !(d.resourceType === 'project' && d.resourceId === d.projectId)) {
    out.push({ type: 'project', id: d.projectId, relation: 'belongs_to' });
  }
  const declared = (d.extra ?? {}).related;
  if (Array.isArray(declared)) {
    for (const r of declared as { type?: unknown; id?: unknown; relation?: unknown }[]) {
      if (typeof r?.type === 'string' && typeof r.id === 'string') {
        out.push({ type: r.type, id: r.id, relation: typeof r.relation === 'string' ? r.relation : 'related' });
      }
    }
  }
  return out;
}

export function operationItem(d: ActivityItemDoc) {
  const extra = d.extra ?? {};
  const who = initiatorOf(d);
  return {
    id: d._id,
    source: { kind: d.sourceKind, record_id: d.sourceId, status: d.sourceStatus },
    resource: { type: d.resourceType, id: d.resourceId },
    project: d.projectId ? { type: 'project', id: d.projectId } : null,
    environment: null,
    title: d.title,
    type: d.type,
    status: d.status,
    terminal: d.terminal ? { outcome: d.terminal.outcome, at: d.terminal.at, error_code: extra.errorCode ?? null } : null,
    current_step: d.current ? d.step : null,
    initiator: who.initiator,
    channel: who.channel,
    executor: (extra.executor as string | undefined) ?? null,
    created_at: iso(d.createdAt),
    started_at: iso(d.startedAt),
    updated_at: iso(d.updatedAt),
    finished_at: iso(d.finishedAt),
    parents: who.parents,
    related_resources: relatedOf(d),
    tasks: tasksOf(d),
    links: operationLinks(d),
  };
}

export interface Viewer {
  /** The reader: `can_decide`/`can_recover` are true only when it may decide this action (decision-rights.ts). */
  reader: Principal | null;
  now: Date;
}

const TERMINAL_ACTION: Record<string, string> = {
  succeeded: 'succeeded',
  failed: 'failed',
  cancelled: 'cancelled',
  expired: 'expired',
  superseded: 'superseded',
};

export function approvalView(a: AgentActionDoc, v: Viewer) {
  if (!a.approval) return null;
  const expired = a.approval.status === 'expired' || (a.approval.status === 'pending' && a.approval.expiresAt <= v.now);
  const status = expired ? 'expired' : a.approval.status;
  const withheld = WITHHELD_ACTION_KEYS.has(a.actionKey);
  const decided = status === 'approved' || status === 'denied';
  const canDecide = mayDecide(v.reader, a.principal);
  const canRecover =
    !withheld && canDecide && status === 'approved' && (a.continuation === 'unavailable' || a.continuation === 'blocked');
  return {
    id: a.approval.id,
    status,
    scope: {
      type: 'action',
      action_id: `${AGENT_SOURCE_KIND}:${a._id}`,
      action_key: a.actionKey,
      // `account`: an account-wide action (no project); `project`: one project's.
      level: a.projectId ? 'project' : 'account',
      project_id: a.projectId,
    },
    expires_at: iso(a.approval.expiresAt),
    decision: decided ? a.approval.decision : null,
    decided_at: iso(a.approval.decidedAt),
    can_decide: !withheld && canDecide && status === 'pending',
    action_hash: a.actionHash,
    decision_path: decisionPath(a.approval.id),
    can_recover: canRecover,
    recovery: canRecover
      ? {
          method: 'POST',
          href: decisionPath(a.approval.id),
          request: { decision: a.approval.decision, action_hash: a.actionHash },
        }
      : null,
  };
}

export function agentItem(a: AgentActionDoc, v: Viewer) {
  const approval = approvalView(a, v);
  const status = approval?.status === 'expired' && a.status === 'pending_approval' ? 'expired' : a.status;
  const terminalOutcome = TERMINAL_ACTION[status];
  return {
    id: `${AGENT_SOURCE_KIND}:${a._id}`,
    source: { kind: AGENT_SOURCE_KIND, record_id: a._id, status },
    action_key: a.actionKey,
    agent: { type: a.proposal ? a.proposal.area : 'cli', objective_id: a.objectiveId },
    principal: { type: a.principal.type, id: a.principal.id },
    resource: a.proposal?.resource
      ? { type: a.proposal.resource.type, id: a.proposal.resource.id }
      : a.projectId
        ? { type: 'project', id: a.projectId }
        : { type: 'account', id: a.accountId },
    project: a.projectId ? { type: 'project', id: a.projectId } : null,
    environment: null,
    title: a.proposal?.title ?? a.actionKey,
    summary: a.proposal?.summary ?? null,
    impact: a.proposal ? { risk: a.proposal.risk } : null,
    revision: null,
    review: null,
    status,
    continuation: { status: a.continuation },
    terminal: terminalOutcome
      ? { outcome: terminalOutcome, at: iso(a.finishedAt ?? a.approval?.expiresAt), error_code: a.errorCode }
      : null,
    authorization: a.authorization ? { outcome: a.authorization.outcome, basis: a.authorization.basis } : null,
    approval,
    operations: a.operations.map((o) => ({
      activity_id: o.activityId,
      resource: { type: o.resourceType, id: o.resourceId },
      relation: o.relation,
      link: o.projectId ? `/api/v1/projects/${o.projectId}/operation-activity/${encodeURIComponent(o.activityId)}` : null,
    })),
    created_at: iso(a.createdAt),
    updated_at: iso(a.updatedAt),
    finished_at: iso(a.finishedAt),
  };
}
