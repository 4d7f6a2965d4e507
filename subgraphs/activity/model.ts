import mongoose, { Schema } from 'mongoose';
import { model } from '../../core/mongo';

/**
 * Read models of the activity area. Both are rebuilt from what they record: items from the source
 * topics (replaying a topic from the start gives the same documents), actions from the agent calls.
 */

/** One projected activity item (spec 2.6); `_id` is the item id `<source_kind>:<source UUID>`. */
export interface ActivityItemDoc {
  _id: string;
  sourceKind: string;
  sourceId: string;
  accountId: string;
  projectId: string | null;
  resourceType: string;
  resourceId: string;
  /** `<resourceType>:<resourceId>`: the key of the application and database scopes. */
  resourceKey: string;
  title: string;
  type: string;
  status: string;
  sourceStatus: string;
  step: string | null;
  terminal: { outcome: string; at: string } | null;
  initiator: unknown;
  createdAt: Date | null;
  startedAt: Date | null;
  updatedAt: Date | null;
  finishedAt: Date | null;
  /** History order: the creation time, else the earliest event seen. */
  sortAt: Date;
  /** Whether the item is still current (not terminal). */
  current: boolean;
  version: number;
  extra: Record<string, unknown>;
  /** The steps the source reported, in the order first seen (spec 2.6 `tasks`); see projection.ts. */
  tasks?: TaskDoc[];
}

/** One step of an item as its events showed it: first and last time it was the current step. */
export interface TaskDoc {
  name: string;
  firstAt: string;
  lastAt: string;
}

const itemSchema = new Schema<ActivityItemDoc>(
  {
    _id: { type: String, required: true },
    sourceKind: { type: String, required: true },
    sourceId: { type: String, required: true },
    accountId: { type: String, required: true },
    projectId: { type: String, default: null },
    resourceType: { type: String, required: true },
    resourceId: { type: String, required: true },
    resourceKey: { type: String, required: true },
    title: { type: String, required: true },
    type: { type: String, required: true },
    status: { type: String, required: true },
    sourceStatus: { type: String, required: true },
    step: { type: String, default: null },
    terminal: { type: Schema.Types.Mixed, default: null },
    initiator: { type: Schema.Types.Mixed, default: null },
    createdAt: { type: Date, default: null },
    startedAt: { type: Date, default: null },
    updatedAt: { type: Date, default: null },
    finishedAt: { type: Date, default: null },
    sortAt: { type: Date, required: true },
    current: { type: Boolean, required: true },
    version: { type: Number, required: true },
    extra: { type: Schema.Types.Mixed, default: () => ({}) },
    tasks: { type: Schema.Types.Mixed, default: () => [] },
  },
  { collection: 'activity_items', versionKey: false, minimize: false, timestamps: false },
);
// Collection reads: one scope of one account, current or history, newest first then id. Scalar
// keys only: the wire server does not index array fields (decision 0001).
itemSchema.index({ accountId: 1, projectId: 1, current: 1, sortAt: -1, _id: -1 });
itemSchema.index({ accountId: 1, resourceKey: 1, current: 1, sortAt: -1, _id: -1 });

export const ACTION_STATES = [
  'proposed',
  'pending_approval',
  'queued',
  'running',
  'succeeded',
  'failed',
  'cancelled',
  'expired',
  'superseded',
  'unknown',
] as const;
export type ActionState = (typeof ACTION_STATES)[number];

export const CONTINUATION_STATES = [
  'waiting_approvals',
  'queued',
  'running',
  'settled',
  'blocked',
  'unavailable',
  'not_required',
] as const;
export type ContinuationState = (typeof CONTINUATION_STATES)[number];

export type AuthorizationOutcome = 'human_approved' | 'automatic' | 'not_recorded';
export type AuthorizationBasis = 'human_decision' | 'read_only_rule' | 'standing_policy' | null;

export interface ApprovalDoc {
  id: string;
  /** `cancelled`: the proposing area withdrew the work before a decision (core/agent-actions.ts). */
  status: 'pending' | 'approved' | 'denied' | 'expired' | 'cancelled';
  expiresAt: Date;
  decision: 'approved' | 'denied' | null;
  decidedAt: Date | null;
  decidedBy: string | null;
}

export interface OperationLinkDoc {
  activityId: string;
  resourceType: string;
  resourceId: string;
  projectId: string | null;
  relation: 'originated' | 'controlled' | 'observed';
}

/** One governed tool call of an agent (spec 2.7), its approval embedded: one document, one atomic write. */
export interface AgentActionDoc {
  _id: string;
  accountId: string;
  /** Null for an account-wide action (proposed through the port with scope `account`). */
  projectId: string | null;
  objectiveId: string;
  actionKey: string;
  actionHash: string;
  status: ActionState;
  continuation: ContinuationState;
  /** Null while undecided or when denied: nothing authorised it. */
  authorization: { outcome: AuthorizationOutcome; basis: AuthorizationBasis } | null;
  approvalId: string | null;
  approval: ApprovalDoc | null;
  principal: { type: string; id: string | null };
  operations: OperationLinkDoc[];
  /** Machine code of the last continuation failure (e.g. no site to restart). */
  errorCode: string | null;
  current: boolean;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
  /**
   * Set when an area proposed the action through the kernel port (core/agent-actions.ts): what it
   * is about, in the area's words. Absent for `platform agents act` actions.
   */
  proposal?: {
    area: string;
    title: string;
    summary: string;
    risk: 'low' | 'medium' | 'high';
    resource: { type: string; id: string } | null;
  } | null;
}

const actionSchema = new Schema<AgentActionDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    projectId: { type: String, default: null },
    objectiveId: { type: String, required: true },
    actionKey: { type: String, required: true },
    actionHash: { type: String, required: true },
    status: { type: String, enum: ACTION_STATES, required: true },
    continuation: { type: String, enum: CONTINUATION_STATES, required: true },
    authorization: { type: Schema.Types.Mixed, default: null },
    approvalId: { type: String, default: null },
    approval: { type: Schema.Types.Mixed, default: null },
    principal: { type: Schema.Types.Mixed, required: true },
    operations: { type: Schema.Types.Mixed, default: () => [] },
    errorCode: { type: String, default: null },
    current: { type: Boolean, required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
    finishedAt: { type: Date, default: null },
    proposal: { type: Schema.Types.Mixed, default: null },
  },
  { collection: 'agent_actions', versionKey: false, minimize: false, timestamps: false },
);
actionSchema.index({ accountId: 1, projectId: 1, status: 1, createdAt: -1, _id: -1 });
actionSchema.index({ approvalId: 1 });
actionSchema.index({ accountId: 1, objectiveId: 1 });

/**
 * How one activity source's projection is doing (availability health): written by the consumer,
 * at most once a second per source and process while healthy, at once on an error and on the
 * first success after one. `_id` is the source kind.
 */
export interface SourceHealthDoc {
  _id: string;
  /** The source's own time of the last event applied (its record's `updatedAt`). */
  lastEventAt: Date | null;
  /** When the projection applied it. */
  lastAppliedAt: Date | null;
  /** lastAppliedAt − lastEventAt: how far behind the source the projection runs. */
  lagMs: number | null;
  lastErrorAt: Date | null;
  /** The failure's kind (source-health.ts errorCode), never its message. */
  lastError: string | null;
}

const healthSchema = new Schema<SourceHealthDoc>(
  {
    _id: { type: String, required: true },
    lastEventAt: { type: Date, default: null },
    lastAppliedAt: { type: Date, default: null },
    lagMs: { type: Number, default: null },
    lastErrorAt: { type: Date, default: null },
    lastError: { type: String, default: null },
  },
  { collection: 'activity_source_health', versionKey: false, minimize: false, timestamps: false },
);

export interface ActivityModels {
  Item: mongoose.Model<ActivityItemDoc>;
  Action: mongoose.Model<AgentActionDoc>;
  Health: mongoose.Model<SourceHealthDoc>;
}

export function activityModels(conn: mongoose.Connection): ActivityModels {
  return {
    Item: model(conn, 'activity', 'Item', itemSchema),
    Action: model(conn, 'activity', 'AgentAction', actionSchema),
    Health: model(conn, 'activity', 'SourceHealth', healthSchema),
  };
}
