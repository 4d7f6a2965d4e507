import mongoose, { Schema } from 'mongoose';
import { outboxField, outboxPlugin, type OutboxEntry } from '../events/outbox';
import { newId } from '../ids';

export const OPERATION_STATUSES = ['pending', 'running', 'completed', 'failed'] as const;
export type OperationStatus = (typeof OPERATION_STATUSES)[number];

export const STEP_STATUSES = ['running', 'completed', 'failed', 'skipped'] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

/** The `step` of an operation nobody has started yet, and of one that completed. */
export const STEP_QUEUED = 'queued';
export const STEP_COMPLETED = 'completed';

/** Operation types of the platform (the engine accepts any registered type). */
export const OPERATION_TYPES = [
  'provision',
  'restart',
  'recovery_point',
  'restore',
  'staging',
  'upgrade',
  'start',
  'stop',
] as const;

/** Attempts (claims) of an operation before a retriable failure becomes final: 3. */
export const DEFAULT_MAX_ATTEMPTS = 3;

export interface OperationStep {
  id: string;
  status: StepStatus;
  startedAt: Date | null;
  finishedAt: Date | null;
  attempts: number;
  /** Redacted error of a failed step. */
  detail: string | null;
  /** The step's return value, replayed instead of re-running a completed step on resume. */
  result: unknown;
}

export interface OperationLease {
  owner: string | null;
  /** Fencing token: incremented by every claim; every write of the holder is conditional on it. */
  token: number;
  until: Date | null;
}

export interface OperationDoc {
  _id: string;
  accountId: string;
  projectId: string;
  resourceType: string;
  resourceId: string;
  operationType: string;
  status: OperationStatus;
  step: string;
  steps: OperationStep[];
  input: unknown;
  result: unknown;
  errorCode: string | null;
  errorMessage: string | null;
  /** Claims so far (the first run is attempt 1). */
  attempt: number;
  maxAttempts: number;
  runAfter: Date;
  lease: OperationLease;
  heartbeatAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /**
   * The overall deadline: past it the operation fails `operation_deadline_exceeded` (a running
   * attempt is aborted), so a hung operation never holds its resource's lock for ever.
   */
  deadlineAt: Date | null;
  initiator: unknown;
  /** W3C traceparent of the request that enqueued it: each run is a span of that trace. */
  traceparent?: string | null;
  outbox: OutboxEntry[];
}

const stepSchema = new Schema<OperationStep>(
  {
    id: { type: String, required: true },
    status: { type: String, enum: STEP_STATUSES, required: true },
    startedAt: { type: Date, default: null },
    finishedAt: { type: Date, default: null },
    attempts: { type: Number, default: 0 },
    detail: { type: String, default: null },
    result: { type: Schema.Types.Mixed, default: null },
  },
  { _id: false, minimize: false },
);

export const operationSchema = new Schema<OperationDoc>(
  {
    _id: { type: String, default: newId },
    accountId: { type: String, required: true },
    projectId: { type: String, required: true },
    resourceType: { type: String, required: true },
    resourceId: { type: String, required: true },
    operationType: { type: String, required: true },
    status: { type: String, enum: OPERATION_STATUSES, required: true, default: 'pending' },
    step: { type: String, required: true, default: STEP_QUEUED },
    steps: { type: [stepSchema], default: () => [] },
    input: { type: Schema.Types.Mixed, default: null },
    result: { type: Schema.Types.Mixed, default: null },
    errorCode: { type: String, default: null },
    errorMessage: { type: String, default: null },
    attempt: { type: Number, default: 0 },
    maxAttempts: { type: Number, default: DEFAULT_MAX_ATTEMPTS },
    runAfter: { type: Date, required: true, default: () => new Date() },
    lease: {
      owner: { type: String, default: null },
      token: { type: Number, default: 0 },
      until: { type: Date, default: null },
    },
    heartbeatAt: { type: Date, default: null },
    createdAt: { type: Date, required: true, default: () => new Date() },
    updatedAt: { type: Date, required: true, default: () => new Date() },
    startedAt: { type: Date, default: null },
    finishedAt: { type: Date, default: null },
    deadlineAt: { type: Date, default: null },
    initiator: { type: Schema.Types.Mixed, default: null },
    traceparent: { type: String, default: null },
    outbox: outboxField,
  },
  { collection: 'operations', versionKey: false, minimize: false, timestamps: false },
);

operationSchema.plugin(outboxPlugin);
// Claiming scans due work in order.
operationSchema.index({ status: 1, runAfter: 1 });
// Project feeds, newest first.
operationSchema.index({ projectId: 1, createdAt: -1 });
operationSchema.index({ resourceType: 1, resourceId: 1, createdAt: -1 });
// The claim's compare-and-swap and the holder's fenced writes filter on exactly these keys
// (store.ts CLAIM_CAS_KEYS, FENCE_KEYS). `_id` alone makes them unique; being unique is what makes
// the MongoDB-wire server answer them from the index instead of a scan (decision 0015). On real
// MongoDB they cost one more index entry per write and change nothing else.
operationSchema.index({ _id: 1, status: 1, step: 1, 'lease.token': 1, 'lease.until': 1 }, { unique: true });
operationSchema.index({ _id: 1, 'lease.owner': 1, 'lease.token': 1 }, { unique: true });

export type OperationModel = mongoose.Model<OperationDoc>;

export const OPERATION_MODEL_NAME = 'Operation';

/** The operations model on `conn` (registered once per connection). */
export function operationModel(conn: mongoose.Connection): OperationModel {
  return (
    (conn.models[OPERATION_MODEL_NAME] as OperationModel | undefined) ??
    conn.model<OperationDoc>(OPERATION_MODEL_NAME, operationSchema)
  );
}
