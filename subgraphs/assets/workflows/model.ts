import { type Connection, type Model, Schema } from 'mongoose';
import { type OutboxEntry, outboxPlugin } from '../../../core/events/outbox';
import { model } from '../../../core/mongo';
import type { Principal } from '../../../core/principal';
import type { Definition } from './catalog';

/**
 * Workflows, their immutable published versions, runs, approvals, automation audits and workflow
 * hooks (a hook delivery id is the seed of its run's id, so a replay is a duplicate run id). One concept per document, so every state change is one
 * conditional single-document update (decision 0001: no transactions).
 */

export const WORKFLOW_STATUSES = ['draft', 'active', 'inactive'] as const;
export type WorkflowStatus = (typeof WORKFLOW_STATUSES)[number];

export interface WorkflowDoc {
  _id: string;
  accountId: string;
  name: string;
  /** The project whose activity feeds show this workflow's runs; null: the account's own. */
  projectId: string | null;
  status: WorkflowStatus;
  draft: Definition;
  /** Guards the draft (ETag / If-Match). */
  revision: number;
  latestVersion: number;
  activeVersion: number | null;
  /** Set on the first activation of a `hook` workflow (its secret lives in HookDoc, sealed). */
  hook: { token: string; createdAt: Date } | null;
  createdAt: Date;
  updatedAt: Date;
}

const workflowSchema = new Schema<WorkflowDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    name: { type: String, required: true },
    projectId: { type: String, default: null },
    status: { type: String, enum: WORKFLOW_STATUSES, required: true },
    draft: { type: Schema.Types.Mixed, required: true },
    revision: { type: Number, required: true },
    latestVersion: { type: Number, required: true, default: 0 },
    activeVersion: { type: Number, default: null },
    hook: { type: Schema.Types.Mixed, default: null },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'asset_workflows', versionKey: false, minimize: false },
);
workflowSchema.index({ accountId: 1, createdAt: -1 });

/** A published version: written once, never updated (spec 4.3 "publish (immutable version)"). */
export interface WorkflowVersionDoc {
  /** `<workflowId>:<version>`: a second publish of the same number is a duplicate key. */
  _id: string;
  accountId: string;
  workflowId: string;
  version: number;
  definition: Definition;
  createdAt: Date;
}
const versionSchema = new Schema<WorkflowVersionDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    workflowId: { type: String, required: true },
    version: { type: Number, required: true },
    definition: { type: Schema.Types.Mixed, required: true },
    createdAt: { type: Date, required: true },
  },
  { collection: 'asset_workflow_versions', versionKey: false, minimize: false },
);
versionSchema.index({ accountId: 1, workflowId: 1, version: -1 });

export const RUN_STATUSES = ['queued', 'running', 'waiting_approval', 'succeeded', 'failed', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const TERMINAL_RUN: ReadonlySet<RunStatus> = new Set(['succeeded', 'failed', 'cancelled']);
export const STEP_RUN_STATUSES = ['pending', 'running', 'waiting', 'succeeded', 'failed', 'skipped'] as const;

export interface RunStepDoc {
  id: string;
  type: string;
  status: (typeof STEP_RUN_STATUSES)[number];
  result: unknown;
  errorCode: string | null;
  finishedAt: Date | null;
}

export interface RunDoc {
  _id: string;
  accountId: string;
  workflowId: string;
  projectId: string | null;
  version: number;
  /** How it started: `manual` (with the key id) or `hook` (with the delivery id). */
  trigger: { type: string; keyId: string | null; deliveryId: string | null };
  input: Record<string, unknown>;
  /** Whose authority the steps act with: the caller who ran it (hooks: who activated the workflow). */
  actor: Principal;
  status: RunStatus;
  /** Index of the next step to run. */
  cursor: number;
  steps: RunStepDoc[];
  /** Bumped by each continuation (start, approval, retry): part of the next operation's id. */
  segment: number;
  /** Operation ids of the run's segments, oldest first (each one is in operation activity). */
  operations: string[];
  approvalId: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

const runSchema = new Schema<RunDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    workflowId: { type: String, required: true },
    projectId: { type: String, default: null },
    version: { type: Number, required: true },
    trigger: { type: Schema.Types.Mixed, required: true },
    input: { type: Schema.Types.Mixed, default: () => ({}) },
    actor: { type: Schema.Types.Mixed, required: true },
    status: { type: String, enum: RUN_STATUSES, required: true },
    cursor: { type: Number, required: true, default: 0 },
    steps: { type: Schema.Types.Mixed, default: () => [] },
    segment: { type: Number, required: true, default: 0 },
    operations: { type: [String], default: () => [] },
    approvalId: { type: String, default: null },
    errorCode: { type: String, default: null },
    errorMessage: { type: String, default: null },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
    finishedAt: { type: Date, default: null },
  },
  { collection: 'asset_workflow_runs', versionKey: false, minimize: false },
);
runSchema.index({ accountId: 1, workflowId: 1, createdAt: -1 });

export const APPROVAL_STATUSES = ['pending', 'approved', 'rejected', 'expired', 'cancelled'] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

/**
 * Something a person must allow before it happens: a run waiting at a `wait_for_approval` step, or
 * a non-read-only automation (MCP) tool call. Shaped as an agent action (spec 2.7): an action key,
 * an action hash the decision must offer, an expiry.
 */
export interface ApprovalDoc {
  _id: string;
  accountId: string;
  kind: 'workflow_step' | 'automation_tool';
  /** e.g. `assets.workflow.continue`, `assets.tag`. */
  actionKey: string;
  actionHash: string;
  title: string;
  status: ApprovalStatus;
  projectId: string | null;
  runId: string | null;
  stepId: string | null;
  /** The tool call to perform once approved (automation_tool). */
  tool: { name: string; args: Record<string, unknown>; scope: string } | null;
  requestedBy: { type: string; id: string | null };
  /** Whose authority the approved work acts with (the caller who asked for it). */
  actor: Principal;
  expiresAt: Date;
  decidedAt: Date | null;
  decidedBy: string | null;
  note: string | null;
  /** The operation that did the approved work (its id is fixed by the approval). */
  operationId: string | null;
  createdAt: Date;
  updatedAt: Date;
  /** Each change's activity event, written by the same update (./activity.ts). */
  outbox: OutboxEntry[];
}

const approvalSchema = new Schema<ApprovalDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    kind: { type: String, required: true },
    actionKey: { type: String, required: true },
    actionHash: { type: String, required: true },
    title: { type: String, required: true },
    status: { type: String, enum: APPROVAL_STATUSES, required: true },
    projectId: { type: String, default: null },
    runId: { type: String, default: null },
    stepId: { type: String, default: null },
    tool: { type: Schema.Types.Mixed, default: null },
    requestedBy: { type: Schema.Types.Mixed, required: true },
    actor: { type: Schema.Types.Mixed, required: true },
    expiresAt: { type: Date, required: true },
    decidedAt: { type: Date, default: null },
    decidedBy: { type: String, default: null },
    note: { type: String, default: null },
    operationId: { type: String, default: null },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'asset_approvals', versionKey: false, minimize: false },
);
approvalSchema.index({ accountId: 1, status: 1, createdAt: -1 });
approvalSchema.plugin(outboxPlugin);

/** One governed tool call: who, which tool, under which scope, and what came of it. */
export interface AuditDoc {
  _id: string;
  accountId: string;
  keyId: string | null;
  tool: string;
  scope: string;
  outcome: 'allowed' | 'refused' | 'approval_required' | 'failed';
  errorCode: string | null;
  approvalId: string | null;
  createdAt: Date;
}
const auditSchema = new Schema<AuditDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    keyId: { type: String, default: null },
    tool: { type: String, required: true },
    scope: { type: String, required: true },
    outcome: { type: String, required: true },
    errorCode: { type: String, default: null },
    approvalId: { type: String, default: null },
    createdAt: { type: Date, required: true },
  },
  { collection: 'asset_automation_audits', versionKey: false, minimize: false },
);
auditSchema.index({ accountId: 1, createdAt: -1 });

/** A workflow hook: `_id` is the path token, so the receiver finds it by `_id` (decision 0001). */
export interface HookDoc {
  _id: string;
  accountId: string;
  workflowId: string;
  /** The Standard Webhooks secret (`whsec_…`), sealed for this token (core/secrets). */
  secretSealed: string;
  /** Whose authority the runs it starts act with: the caller who activated the workflow. */
  actor: Principal;
  createdAt: Date;
}
const hookSchema = new Schema<HookDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    workflowId: { type: String, required: true },
    secretSealed: { type: String, required: true },
    actor: { type: Schema.Types.Mixed, required: true },
    createdAt: { type: Date, required: true },
  },
  { collection: 'asset_workflow_hooks', versionKey: false },
);

export interface WorkflowModels {
  Workflow: Model<WorkflowDoc>;
  Version: Model<WorkflowVersionDoc>;
  Run: Model<RunDoc>;
  Approval: Model<ApprovalDoc>;
  Audit: Model<AuditDoc>;
  Hook: Model<HookDoc>;
}

export function workflowModels(conn: Connection): WorkflowModels {
  return {
    Workflow: model(conn, 'assets', 'Workflow', workflowSchema),
    Version: model(conn, 'assets', 'WorkflowVersion', versionSchema),
    Run: model(conn, 'assets', 'WorkflowRun', runSchema),
    Approval: model(conn, 'assets', 'Approval', approvalSchema),
    Audit: model(conn, 'assets', 'AutomationAudit', auditSchema),
    Hook: model(conn, 'assets', 'WorkflowHook', hookSchema),
  };
}
