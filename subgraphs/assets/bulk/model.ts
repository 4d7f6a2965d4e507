import { type Connection, type Model, Schema } from 'mongoose';
import { model } from '../../../core/mongo';

/** Spec 2.3 bulk actions. */
export const BULK_ACTIONS = ['delete', 'visibility', 'add_tags'] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];
/** `queued` → `running` → `succeeded` once every item has its own result (which may be a failure). */
export const BULK_JOB_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const;
export type BulkJobStatus = (typeof BULK_JOB_STATUSES)[number];

export interface BulkItem {
  index: number;
  assetId: string;
  /** The revision the caller saw: the item applies only while the asset still has it. */
  revision: number;
  action: BulkAction;
  visibility?: 'public' | 'private';
  tags?: string[];
}

export interface BulkResult {
  index: number;
  assetId: string;
  action: BulkAction;
  status: 'succeeded' | 'failed';
  /** What the same change alone would have answered: 200, 404, 412. */
  statusCode: number;
  errorCode: string | null;
  errorMessage: string | null;
  /** The asset's revision after the change (succeeded), or its current one (412). */
  revision: number | null;
  /** The delete job of a `delete` item. */
  deleteJobId: string | null;
}

export interface BulkJobDoc {
  _id: string;
  accountId: string;
  status: BulkJobStatus;
  total: number;
  succeeded: number;
  failed: number;
  chunkCount: number;
  /** Chunks whose results are counted in `succeeded`/`failed` (advanced one at a time, guarded). */
  chunksDone: number;
  error: string | null;
  createdAt: Date;
  updatedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** A slice of a job's items and, once applied, their results: one document write per slice. */
export interface BulkChunkDoc {
  /** `<job id>:<chunk number>` */
  _id: string;
  jobId: string;
  accountId: string;
  number: number;
  items: BulkItem[];
  results: BulkResult[];
  done: boolean;
}

const jobSchema = new Schema<BulkJobDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    status: { type: String, required: true },
    total: Number,
    succeeded: { type: Number, default: 0 },
    failed: { type: Number, default: 0 },
    chunkCount: Number,
    chunksDone: { type: Number, default: 0 },
    error: { type: String, default: null },
    createdAt: Date,
    updatedAt: Date,
    startedAt: { type: Date, default: null },
    finishedAt: { type: Date, default: null },
  },
  { collection: 'asset_bulk_jobs', versionKey: false, minimize: false },
);
// Exact keys of the guarded progress update (decision 0001: no scan).
jobSchema.index({ _id: 1, chunksDone: 1 }, { unique: true, name: 'bulk_progress' });

const chunkSchema = new Schema<BulkChunkDoc>(
  {
    _id: { type: String, required: true },
    jobId: String,
    accountId: String,
    number: Number,
    items: { type: Schema.Types.Mixed, default: () => [] },
    results: { type: Schema.Types.Mixed, default: () => [] },
    done: { type: Boolean, default: false },
  },
  { collection: 'asset_bulk_chunks', versionKey: false, minimize: false },
);

export interface BulkModels {
  Job: Model<BulkJobDoc>;
  Chunk: Model<BulkChunkDoc>;
}

export function bulkModels(conn: Connection): BulkModels {
  return {
    Job: model(conn, 'assets', 'BulkJob', jobSchema),
    Chunk: model(conn, 'assets', 'BulkChunk', chunkSchema),
  };
}
