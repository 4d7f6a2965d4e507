import { type Connection, type Model, Schema } from 'mongoose';
import { model } from '../../../core/mongo';
import type { AiModel } from './evaluation';
import type { AiAction } from './pricing';

/** The account's AI configuration (spec 2.3): one document per account, guarded by `revision`. */
export interface AiConfigDoc {
  /** The account id. */
  _id: string;
  enabledActions: AiAction[];
  monthlySpendCapMicros: number;
  model: AiModel;
  revision: number;
  updatedAt: Date;
}

/**
 * One UTC month of an account's AI spend. A request takes its price with one conditional `$inc`
 * (`spentMicros ≤ cap − price`) that also records its reservation token, so the cap can never be
 * overrun by concurrent requests; a failed job gives its price back by a `$pull` of the same token
 * (once: the filter holds the token).
 */
export interface AiSpendDoc {
  /** `<accountId>:<YYYY-MM>` */
  _id: string;
  accountId: string;
  period: string;
  spentMicros: number;
  /** Reservation tokens (`<jobId>:<attempt>`) of this month, the last 1,000. */
  reservations: string[];
}

export const AI_JOB_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const;
export type AiJobStatus = (typeof AI_JOB_STATUSES)[number];

/** An AI action, OCR extraction or generation: a durable job run by the kernel engine. */
export interface AiJobDoc {
  _id: string;
  accountId: string;
  /** The source asset (null for generations). */
  assetId: string | null;
  action: AiAction;
  model: AiModel;
  status: AiJobStatus;
  /** 1, then one more per retry (`POST /text-extractions/{id}/retry`). */
  attempt: number;
  priceMicros: number;
  /** The month whose spend holds this attempt's reservation. */
  period: string;
  input: Record<string, unknown>;
  result: Record<string, unknown> | null;
  /** Private assets this job made (smart crop, cut-out, generated images). */
  outputAssetIds: string[];
  /** The ledger entry of the attempt that succeeded. */
  ledgerEntryId: string | null;
  /** The attempt whose charge the usage counters hold (`/analytics`), so a re-run counts nothing. */
  countedAttempt?: number | null;
  error: { code: string; message: string } | null;
  /** Who asked (the executor acts for them: quota and plan). */
  keyId: string;
  plan: string;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

/** The latest result of each action on one asset (`GET /{id}/ai`): one point read. */
export interface AiDataDoc {
  /** The asset id. */
  _id: string;
  accountId: string;
  results: Record<string, { jobId: string; at: Date; result: Record<string, unknown>; outputAssetIds: string[] }>;
  /** The latest text extraction job of the asset (`GET /{id}/text-extraction`). */
  lastExtractionId: string | null;
  updatedAt: Date;
}

const configSchema = new Schema<AiConfigDoc>(
  {
    _id: { type: String, required: true },
    enabledActions: [String],
    monthlySpendCapMicros: Number,
    model: String,
    revision: { type: Number, required: true },
    updatedAt: Date,
  },
  { collection: 'asset_ai_configs', versionKey: false },
);
configSchema.index({ _id: 1, revision: 1 }, { unique: true, name: 'ai_config_revision' });

const spendSchema = new Schema<AiSpendDoc>(
  {
    _id: { type: String, required: true },
    accountId: String,
    period: String,
    spentMicros: { type: Number, default: 0 },
    reservations: { type: [String], default: [] },
  },
  { collection: 'asset_ai_spend', versionKey: false },
);

const jobSchema = new Schema<AiJobDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    assetId: { type: String, default: null },
    action: { type: String, required: true },
    model: String,
    status: { type: String, required: true },
    attempt: { type: Number, default: 1 },
    priceMicros: Number,
    period: String,
    input: { type: Schema.Types.Mixed, default: () => ({}) },
    result: { type: Schema.Types.Mixed, default: null },
    outputAssetIds: { type: [String], default: [] },
    ledgerEntryId: { type: String, default: null },
    countedAttempt: { type: Number, default: null },
    error: { type: Schema.Types.Mixed, default: null },
    keyId: String,
    plan: String,
    createdAt: Date,
    updatedAt: Date,
    finishedAt: { type: Date, default: null },
  },
  { collection: 'asset_ai_jobs', versionKey: false, minimize: false },
);

const dataSchema = new Schema<AiDataDoc>(
  {
    _id: { type: String, required: true },
    accountId: String,
    results: { type: Schema.Types.Mixed, default: () => ({}) },
    lastExtractionId: { type: String, default: null },
    updatedAt: Date,
  },
  { collection: 'asset_ai_data', versionKey: false, minimize: false },
);

export interface AiModels {
  Config: Model<AiConfigDoc>;
  Spend: Model<AiSpendDoc>;
  Job: Model<AiJobDoc>;
  Data: Model<AiDataDoc>;
}

export const aiModels = (conn: Connection): AiModels => ({
  Config: model(conn, 'assets', 'AiConfig', configSchema),
  Spend: model(conn, 'assets', 'AiSpend', spendSchema),
  Job: model(conn, 'assets', 'AiJob', jobSchema),
  Data: model(conn, 'assets', 'AiData', dataSchema),
});
