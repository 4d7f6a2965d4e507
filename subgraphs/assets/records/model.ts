import { type Connection, type Model, Schema } from 'mongoose';
import { type OutboxEntry, outboxPlugin } from '../../../core/events/outbox';
import { model } from '../../../core/mongo';

/** Spec 3.3 states (`deleting` until the delete job has removed the bytes). */
export const ASSET_STATUSES = ['processing', 'ready', 'quarantined', 'failed', 'deleting'] as const;
export type AssetStatus = (typeof ASSET_STATUSES)[number];
/** Spec "not shown" values: docs/spec-decisions.md (## Assets). */
export const VISIBILITIES = ['public', 'private'] as const;
export type Visibility = (typeof VISIBILITIES)[number];
export const ASSET_TYPES = ['image', 'video', 'audio', 'document', 'other'] as const;
export type AssetType = (typeof ASSET_TYPES)[number];
export const SCAN_STATUSES = ['pending', 'clean', 'infected', 'skipped'] as const;
export const REPLICATION_STATUSES = ['not_required', 'pending', 'replicated', 'failed'] as const;
export const MODERATION_STATUSES = ['not_requested', 'pending', 'approved', 'rejected'] as const;
export const QUARANTINE_STATUSES = ['none', 'quarantined', 'released'] as const;

export interface AssetVersion {
  /** 1, 2, … in order of creation. */
  number: number;
  sha256: string;
  size: number;
  mimeType: string;
  originalName: string;
  /** `main` or the branch it was made on. */
  branch: string;
  createdAt: Date;
}

export interface AssetBranch {
  name: string;
  /** The version the branch points at. */
  version: number;
  createdAt: Date;
}

export interface AssetDoc {
  _id: string;
  accountId: string;
  bucketId: string;
  key: string;
  folder: string;
  visibility: Visibility;
  cacheControl: string;
  metadata: Record<string, unknown>;
  originalName: string;
  tags: string[];
  mimeType: string;
  type: AssetType;
  size: number;
  checksum: string;
  status: AssetStatus;
  scanStatus: string;
  replicationStatus: string;
  moderationStatus: string;
  quarantineStatus: string;
  /** Bumped by every change; sent as `ETag`, taken back in `If-Match`. */
  revision: number;
  currentVersion: number;
  versions: AssetVersion[];
  /**
   * Blobs committed for a version not yet recorded (a replace in flight): they count as used, so
   * no unused-blob check deletes them between the commit and the record (uploads.ts `replace`).
   */
  pendingBlobs?: string[];
  branches: AssetBranch[];
  homeRegion: string;
  /** Regions that must hold a copy besides the home region, and those that do. */
  replicaRegions: string[];
  replicatedRegions: string[];
  createdAt: Date;
  updatedAt: Date;
  outbox: OutboxEntry[];
}

const versionSchema = new Schema<AssetVersion>(
  {
    number: Number,
    sha256: String,
    size: Number,
    mimeType: String,
    originalName: String,
    branch: String,
    createdAt: Date,
  },
  { _id: false },
);

const assetSchema = new Schema<AssetDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    bucketId: { type: String, required: true },
    key: { type: String, required: true },
    folder: { type: String, default: '' },
    visibility: { type: String, required: true },
    cacheControl: { type: String, required: true },
    metadata: { type: Schema.Types.Mixed, default: () => ({}) },
    originalName: { type: String, required: true },
    tags: { type: [String], default: () => [] },
    mimeType: { type: String, required: true },
    type: { type: String, required: true },
    size: { type: Number, required: true },
    checksum: { type: String, required: true },
    status: { type: String, required: true },
    scanStatus: { type: String, required: true },
    replicationStatus: { type: String, required: true },
    moderationStatus: { type: String, default: 'not_requested' },
    quarantineStatus: { type: String, default: 'none' },
    revision: { type: Number, required: true },
    currentVersion: { type: Number, required: true },
    versions: { type: [versionSchema], default: () => [] },
    pendingBlobs: { type: [String], default: undefined },
    branches: {
      type: [new Schema<AssetBranch>({ name: String, version: Number, createdAt: Date }, { _id: false })],
      default: () => [],
    },
    homeRegion: { type: String, required: true },
    replicaRegions: { type: [String], default: () => [] },
    replicatedRegions: { type: [String], default: () => [] },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'assets', versionKey: false, minimize: false },
);
// One key per bucket (409 on a second upload of the same key).
assetSchema.index({ accountId: 1, bucketId: 1, key: 1 }, { unique: true, name: 'asset_key' });
assetSchema.index({ accountId: 1, createdAt: -1, _id: -1 });
assetSchema.index({ checksum: 1 });
assetSchema.index({ 'versions.sha256': 1 });
assetSchema.index({ status: 1, updatedAt: 1 });
// Exact keys of a bulk item's conditional update (decision 0001: an exact unique index avoids a scan).
assetSchema.index({ _id: 1, accountId: 1, revision: 1 }, { unique: true, name: 'asset_revision' });
assetSchema.plugin(outboxPlugin);

export interface BucketDoc {
  _id: string;
  accountId: string;
  name: string;
  defaultVisibility: Visibility;
  cacheControl: string;
  versioning: boolean;
  retentionDays: number | null;
  maxBytes: number | null;
  allowedMimeTypes: string[] | null;
  allowedOrigins: string[];
  homeRegion: string;
  replicationPolicy: { regions: string[] };
  lifecyclePolicy: Record<string, unknown> | null;
  domain: string | null;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}

const bucketSchema = new Schema<BucketDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    name: { type: String, required: true },
    defaultVisibility: { type: String, required: true },
    cacheControl: { type: String, required: true },
    versioning: { type: Boolean, required: true },
    retentionDays: { type: Number, default: null },
    maxBytes: { type: Number, default: null },
    allowedMimeTypes: { type: [String], default: null },
    allowedOrigins: { type: [String], default: () => [] },
    homeRegion: { type: String, required: true },
    replicationPolicy: { regions: { type: [String], default: () => [] } },
    lifecyclePolicy: { type: Schema.Types.Mixed, default: null },
    domain: { type: String, default: null },
    revision: { type: Number, required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'asset_buckets', versionKey: false, minimize: false },
);
bucketSchema.index({ accountId: 1, name: 1 }, { unique: true, name: 'bucket_name' });

/** Content policy and byte usage: one document per account (its id). */
export interface AccountStateDoc {
  _id: string;
  allowedMimeTypes: string[] | null;
  maxImageBytes: number;
  maxVideoBytes: number;
  maxOtherBytes: number;
  requireScan: boolean;
  policyRevision: number;
  /** Bytes held by the account's asset versions (quota, spec 7.3 402). */
  usedBytes: number;
  updatedAt: Date;
}

const accountStateSchema = new Schema<AccountStateDoc>(
  {
    _id: { type: String, required: true },
    allowedMimeTypes: { type: [String], default: null },
    maxImageBytes: Number,
    maxVideoBytes: Number,
    maxOtherBytes: Number,
    requireScan: Boolean,
    policyRevision: { type: Number, default: 1 },
    usedBytes: { type: Number, default: 0 },
    updatedAt: Date,
  },
  { collection: 'asset_accounts', versionKey: false, minimize: false },
);

export const JOB_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export interface JobDoc {
  _id: string;
  accountId: string;
  type: 'delete';
  assetId: string;
  status: JobStatus;
  error: string | null;
  /** Revision the asset had before the job, to restore it when a queued delete is cancelled. */
  priorStatus: string | null;
  /** Until when the claiming worker owns the job (a dead worker's claim lapses). */
  leaseUntil: Date | null;
  /** The asset as it was when the delete was accepted: what the `object.deleted` events describe. */
  snapshot: { bucketId: string; key: string; versions: AssetVersion[]; homeRegion: string; replicaRegions: string[] } | null;
  outbox: OutboxEntry[];
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

const jobSchema = new Schema<JobDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    type: { type: String, required: true },
    assetId: { type: String, required: true },
    status: { type: String, required: true },
    error: { type: String, default: null },
    priorStatus: { type: String, default: null },
    leaseUntil: { type: Date, default: null },
    snapshot: { type: Schema.Types.Mixed, default: null },
    createdAt: Date,
    updatedAt: Date,
    finishedAt: { type: Date, default: null },
  },
  { collection: 'asset_jobs', versionKey: false },
);
jobSchema.index({ status: 1, createdAt: 1 });
jobSchema.plugin(outboxPlugin);

/** A signed download grant: `max_downloads` is counted here with one conditional `$inc`. */
export interface GrantDoc {
  _id: string;
  accountId: string;
  assetId: string;
  version: number;
  expiresAt: Date;
  maxDownloads: number | null;
  downloads: number;
  createdAt: Date;
}

const grantSchema = new Schema<GrantDoc>(
  {
    _id: { type: String, required: true },
    accountId: String,
    assetId: String,
    version: Number,
    expiresAt: Date,
    maxDownloads: { type: Number, default: null },
    downloads: { type: Number, default: 0 },
    createdAt: Date,
  },
  { collection: 'asset_grants', versionKey: false },
);

export const SESSION_STATUSES = ['open', 'completed', 'cancelled', 'expired'] as const;

export interface SessionPart {
  number: number;
  size: number;
  sha256: string;
  receivedAt: Date;
}

/** A resumable (chunked) or single-PUT upload session (spec 2.3). */
export interface SessionDoc {
  _id: string;
  accountId: string;
  keyId: string;
  /** The caller's plan when it was made (the quota applies at completion). */
  plan: string;
  mode: 'chunked' | 'single';
  fileName: string;
  fileSize: number;
  mimeType: string | null;
  checksumSha256: string | null;
  partSize: number;
  /** Where the asset goes and how it is made (the multipart upload's text fields). */
  fields: Record<string, string>;
  status: (typeof SESSION_STATUSES)[number];
  parts: SessionPart[];
  assetId: string | null;
  /**
   * Quota bytes taken when the session was made (its `file_size`), held while it is open, handed to
   * the asset on completion and given back on cancel or expiry. Absent on sessions made before.
   */
  reservedBytes?: number;
  /** `<accountId>:<Idempotency-Key>`, absent without a key (a sparse unique index). */
  idempotencyScope?: string;
  requestHash: string | null;
  expiresAt: Date;
  createdAt: Date;
  updatedAt: Date;
}

const sessionSchema = new Schema<SessionDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    keyId: String,
    plan: String,
    mode: { type: String, required: true },
    fileName: String,
    fileSize: Number,
    mimeType: { type: String, default: null },
    checksumSha256: { type: String, default: null },
    partSize: Number,
    fields: { type: Schema.Types.Mixed, default: () => ({}) },
    status: { type: String, required: true },
    parts: {
      type: [new Schema<SessionPart>({ number: Number, size: Number, sha256: String, receivedAt: Date }, { _id: false })],
      default: () => [],
    },
    assetId: { type: String, default: null },
    reservedBytes: { type: Number },
    idempotencyScope: { type: String },
    requestHash: { type: String, default: null },
    expiresAt: { type: Date, required: true },
    createdAt: Date,
    updatedAt: Date,
  },
  { collection: 'asset_upload_sessions', versionKey: false, minimize: false },
);
// Same Idempotency-Key → the same session (sparse: sessions made without a key are not indexed).
sessionSchema.index({ idempotencyScope: 1 }, { unique: true, sparse: true, name: 'session_idempotency' });
sessionSchema.index({ status: 1, expiresAt: 1 });

export interface AssetModels {
  Asset: Model<AssetDoc>;
  Bucket: Model<BucketDoc>;
  AccountState: Model<AccountStateDoc>;
  Job: Model<JobDoc>;
  Grant: Model<GrantDoc>;
  Session: Model<SessionDoc>;
}

export function assetModels(conn: Connection): AssetModels {
  return {
    Asset: model(conn, 'assets', 'Asset', assetSchema),
    Bucket: model(conn, 'assets', 'Bucket', bucketSchema),
    AccountState: model(conn, 'assets', 'AccountState', accountStateSchema),
    Job: model(conn, 'assets', 'Job', jobSchema),
    Grant: model(conn, 'assets', 'Grant', grantSchema),
    Session: model(conn, 'assets', 'UploadSession', sessionSchema),
  };
}

/**
 * Parts of a session: at least one. An empty file in a single-PUT session has a part size of 0, so
 * the division alone would be 0/0 (NaN, which GraphQL's Int refuses: a 500).
 */
export const partCount = (s: { fileSize: number; partSize: number }): number =>
  s.partSize > 0 ? Math.max(1, Math.ceil(s.fileSize / s.partSize)) : 1;
