import type { ActivityRecord, ActivitySource, ActivityStatus } from '../../../core/activity-source';
import type { OutboxEntry } from '../../../core/events/outbox';
import type { ApprovalDoc, ApprovalStatus } from './model';

/**
 * Approvals in the activity feeds: every change of an approval writes one event into the
 * approval's own outbox (same update as the change), published on `<prefix>.assets.approvals`; the
 * activity area consumes this declared source (core/activity-source.ts). Runs need no source of
 * their own: each run segment is a kernel operation and is already in operation activity.
 */
export const APPROVALS_TOPIC = 'assets.approvals';
export const APPROVAL_SOURCE_KIND = 'asset_approval';

export interface ApprovalEvent {
  event_id: string;
  approval_id: string;
  account_id: string;
  project_id: string | null;
  kind: ApprovalDoc['kind'];
  action_key: string;
  title: string;
  status: ApprovalStatus;
  run_id: string | null;
  step_id: string | null;
  requested_by: { type: string; id: string | null };
  decided_by: string | null;
  created_at: string;
  updated_at: string;
}

const STATUS: Record<ApprovalStatus, ActivityStatus> = {
  pending: 'waiting',
  approved: 'completed',
  rejected: 'failed',
  expired: 'failed',
  cancelled: 'cancelled',
};
const RANK: Record<ApprovalStatus, number> = { pending: 1, approved: 2, rejected: 2, expired: 2, cancelled: 2 };

/** The outbox entry of an approval as it stands after a change (`topic`: the physical topic). */
export function approvalEventEntry(topic: string, a: ApprovalDoc, status: ApprovalStatus, at: Date): OutboxEntry {
  const event: ApprovalEvent = {
    event_id: `${a._id}:${status}`,
    approval_id: a._id,
    account_id: a.accountId,
    project_id: a.projectId,
    kind: a.kind,
    action_key: a.actionKey,
    title: a.title,
    status,
    run_id: a.runId,
    step_id: a.stepId,
    requested_by: a.requestedBy,
    decided_by: status === 'pending' ? null : a.decidedBy,
    created_at: new Date(a.createdAt).toISOString(),
    updated_at: at.toISOString(),
  };
  return { eventId: event.event_id, topic, key: a.accountId, payload: event, createdAt: at };
}

export function mapApprovalEvent(e: ApprovalEvent): ActivityRecord | null {
  if (!e || typeof e.approval_id !== 'string' || typeof e.account_id !== 'string' || !(e.status in STATUS)) return null;
  const at = Date.parse(e.updated_at);
  if (Number.isNaN(at)) return null;
  const terminal = e.status !== 'pending';
  return {
    id: `${APPROVAL_SOURCE_KIND}:${e.approval_id}`,
    sourceKind: APPROVAL_SOURCE_KIND,
    sourceId: e.approval_id,
    accountId: e.account_id,
    resource: e.run_id ? { type: 'asset_workflow_run', id: e.run_id } : { type: 'asset_approval', id: e.approval_id },
    projectId: e.project_id,
    title: e.title,
    type: e.action_key,
    status: STATUS[e.status],
    sourceStatus: e.status,
    step: e.step_id,
    terminal: terminal ? { outcome: e.status, at: e.updated_at } : null,
    initiator: e.requested_by,
    createdAt: e.created_at,
    startedAt: e.created_at,
    updatedAt: e.updated_at,
    finishedAt: terminal ? e.updated_at : null,
    version: at * 10 + RANK[e.status],
    extra: {
      kind: e.kind,
      decided_by: e.decided_by,
      decision_path: `/api/v1/assets/workflows/approvals/${e.approval_id}/decision`,
    },
  };
}

export const approvalActivitySource: ActivitySource<ApprovalEvent> = {
  sourceKind: APPROVAL_SOURCE_KIND,
  topic: APPROVALS_TOPIC,
  map: mapApprovalEvent,
};
