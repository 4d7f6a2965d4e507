import { type Connection, type Model, Schema } from 'mongoose';
import { model } from '../../../core/mongo';

/**
 * A migration's states (spec "not shown"; docs/spec-decisions.md): `queued` → `running` →
 * `succeeded` (every item copied or skipped) | `completed_with_errors` (some items failed; each can
 * be retried) | `failed` (the source could not be listed) | `cancelled`.
 */
export const MIGRATION_STATUSES = ['queued', 'running', 'succeeded', 'completed_with_errors', 'failed', 'cancelled'] as const;
export type MigrationStatus = (typeof MIGRATION_STATUSES)[number];
export const TERMINAL_STATUSES: MigrationStatus[] = ['succeeded', 'completed_with_errors', 'failed', 'cancelled'];

/** An item's states: `pending` → `copying` → `copied` | `failed` (retryable) | `cancelled`. */
export const ITEM_STATUSES = ['pending', 'copying', 'copied', 'failed', 'cancelled'] as const;
export type ItemStatus = (typeof ITEM_STATUSES)[number];
/** How many items of a migration are in each status, and in all. */
export type ItemCounts = Record<ItemStatus | 'total', number>;

export interface MigrationDoc {
  _id: string;
  accountId: string;
  connectionId: string;
  bucketId: string;
  /** Keys land under this folder of the bucket ('' = as in the source). */
  folder: string;
  status: MigrationStatus;
  /** The engine operation running it now (a retry after the end starts another). */
  operationId: string;
  /** The plan of the key that asked for it: the quota the copies count against. */
  plan: 'free' | 'pro';
  keyId: string;
  listed: boolean;
  error: { code: string; message: string } | null;
  createdAt: Date;
  updatedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

export interface MigrationItemDoc {
  /** Derived from the migration id and the source key: listing again never makes a second item. */
  _id: string;
  migrationId: string;
  accountId: string;
  /** Key in the source. */
  sourceKey: string;
  /** Key of the asset in the bucket. */
  key: string;
  status: ItemStatus;
  /** What the source stated (size, S3 ETag, manifest SHA-256), checked against the bytes copied. */
  sourceSize: number | null;
  sourceEtag: string | null;
  sourceSha256: string | null;
  sourceUrl: string | null;
  /** What was copied. */
  sha256: string | null;
  size: number | null;
  assetId: string | null;
  attempts: number;
  error: { code: string; message: string } | null;
  copiedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

const errorShape = { type: new Schema({ code: String, message: String }, { _id: false }), default: null };

const migrationSchema = new Schema<MigrationDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    connectionId: { type: String, required: true },
    bucketId: { type: String, required: true },
    folder: { type: String, default: '' },
    status: { type: String, required: true, enum: MIGRATION_STATUSES },
    operationId: { type: String, required: true },
    plan: String,
    keyId: String,
    listed: { type: Boolean, default: false },
    error: errorShape,
    createdAt: Date,
    updatedAt: Date,
    startedAt: { type: Date, default: null },
    finishedAt: { type: Date, default: null },
  },
  { collection: 'asset_migrations', versionKey: false, minimize: false },
);
migrationSchema.index({ accountId: 1, createdAt: -1, _id: -1 });

const itemSchema = new Schema<MigrationItemDoc>(
  {
    _id: { type: String, required: true },
    migrationId: { type: String, required: true },
    accountId: { type: String, required: true },
    sourceKey: { type: String, required: true },
    key: { type: String, required: true },
    status: { type: String, required: true, enum: ITEM_STATUSES },
    sourceSize: { type: Number, default: null },
    sourceEtag: { type: String, default: null },
    sourceSha256: { type: String, default: null },
    sourceUrl: { type: String, default: null },
    sha256: { type: String, default: null },
    size: { type: Number, default: null },
    assetId: { type: String, default: null },
    attempts: { type: Number, default: 0 },
    error: errorShape,
    copiedAt: { type: Date, default: null },
    createdAt: Date,
    updatedAt: Date,
  },
  { collection: 'asset_migration_items', versionKey: false, minimize: false },
);
itemSchema.index({ migrationId: 1, status: 1, _id: 1 });
itemSchema.index({ migrationId: 1, sourceKey: 1 });

export interface MigrationModels {
  Migration: Model<MigrationDoc>;
  Item: Model<MigrationItemDoc>;
}

export const migrationModels = (conn: Connection): MigrationModels => ({
  Migration: model(conn, 'assets', 'Migration', migrationSchema),
  Item: model(conn, 'assets', 'MigrationItem', itemSchema),
});
