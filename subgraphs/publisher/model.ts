import mongoose, { type Connection, type Model } from 'mongoose';
import { model } from '../../core/mongo';

const AREA = 'publisher';

/** Stored lifecycle states; `provision_failed` and friends are derived from the active operation. */
export type StoredSiteStatus = 'provisioning' | 'running' | 'stopped' | 'deleted';
/** A production site, or a staging copy made from another site's recovery point. */
export type SiteEnvironment = 'production' | 'staging';

export interface SiteDoc {
  /** The site's id is its project's id: one publishing site per project. */
  _id: string;
  accountId: string;
  name: string;
  slug: string;
  runtimeVersion: string;
  deploymentMode: 'hosted' | 'connected_node';
  targetNodeId: string | null;
  placementMode: string | null;
  nodeSelectorTags: string[];
  mailEnabled: boolean;
  /** Whether the site sleeps when idle (its plan's rule when it was made: hosted-slots.ts); absent: it does. */
  sleepsWhenIdle?: boolean;
  status: StoredSiteStatus;
  siteUrl: string;
  adminUrl: string;
  environment: SiteEnvironment;
  /** Staging copies: the site and recovery point they were made from. */
  sourceProjectId: string | null;
  sourceRecoveryPointId: string | null;
  /** The managed database's id (the activity feeds' `/databases/{id}`); absent on sites made before it. */
  databaseId?: string | null;
  /** Custom domain (normalised ASCII) and its verification state. */
  domain: string | null;
  domainStatus: DomainStatus | null;
  /** The TXT token of the site's claim (domain-claims.ts); null once verified or without a domain. */
  domainToken?: string | null;
  /** When the unverified claim lapses; null once verified. */
  domainExpiresAt?: Date | null;
  domainUpdatedAt: Date | null;
  /** Transactional sender; verified against the account's senders when set. */
  mailSenderEmail: string | null;
  /** The lifecycle operation holding the site's lock; a terminal one frees it (site-locks.ts). */
  activeOperationId: string | null;
  /** When the lock was taken (informational; no rule reads the clock). */
  activeOperationAt: Date | null;
  /** `<operation id>:<lease token>` of the attempt allowed to change the site (core/operations/fencing.ts). */
  fence?: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export type DomainStatus = 'pending_verification' | 'active' | 'expired';

/** Per-account count of hosted sites, incremented conditionally so a plan limit holds under races. */
export interface SiteQuotaDoc {
  _id: string;
  hostedSites: number;
  /** The sites holding a slot: reserving and releasing are idempotent per site. */
  holders?: string[];
}

/** Who holds a custom domain: `_id` is the domain, so two sites can never hold the same one. */
export interface DomainClaimDoc {
  _id: string;
  projectId: string;
  accountId: string;
  /** Expected in the `_platform-verification` TXT record; a new claim gets a new one. */
  token?: string;
  createdAt: Date;
  /** An unverified claim holds the name until then (null once verified). */
  expiresAt?: Date | null;
  verifiedAt?: Date | null;
}

export const RECOVERY_POINT_KINDS = ['manual', 'pre_upgrade', 'staging_source'] as const;
export type RecoveryPointKind = (typeof RECOVERY_POINT_KINDS)[number];
/** `pending` while the capture runs; then `completed`, or `incomplete` when any part failed. */
export type RecoveryPointStatus = 'pending' | 'completed' | 'incomplete';
/** State of one part of a capture; `skipped` when an earlier part failed. */
export type CaptureStatus = 'pending' | 'captured' | 'failed' | 'skipped';

export interface CaptureDoc {
  status: CaptureStatus;
  snapshotId: string | null;
  sizeBytes: number | null;
  /** Hex SHA-256 of the stored bytes (the blob-store address of a real capture; null when simulated). */
  sha256?: string | null;
  capturedAt: Date | null;
}

export interface RecoveryPointDoc {
  _id: string;
  accountId: string;
  projectId: string;
  kind: RecoveryPointKind;
  reason: string | null;
  status: RecoveryPointStatus;
  /** The exact runtime release: pinned when the point is taken (the site's lock keeps it still). */
  runtimeVersion: string;
  runtimeDigest: string;
  runtimeImage: string;
  database: CaptureDoc;
  content: CaptureDoc;
  release: CaptureDoc;
  /** The operation that captures it (a `recovery_point`, `upgrade` or `staging` operation). */
  operationId: string;
  /** Why it is incomplete (the failing step's error code). */
  errorCode: string | null;
  createdAt: Date;
  completedAt: Date | null;
}

/** A site's newsletter-provider mapping and configuration; `_id` is the project id. */
export interface NewsletterProviderDoc {
  _id: string;
  accountId: string;
  domain: string;
  region: string;
  fromEmail: string;
  fromName: string | null;
  /** `encryptSecret` output; the key itself is never stored, returned or logged. */
  apiKeyCiphertext: string;
  createdAt: Date;
  updatedAt: Date;
}

const captureSchema = new mongoose.Schema<CaptureDoc>(
  {
    status: { type: String, required: true },
    snapshotId: { type: String, default: null },
    sizeBytes: { type: Number, default: null },
    sha256: { type: String, default: null },
    capturedAt: { type: Date, default: null },
  },
  { _id: false },
);

const siteSchema = new mongoose.Schema<SiteDoc>(
  {
    _id: String,
    accountId: { type: String, required: true, index: true },
    name: { type: String, required: true },
    slug: { type: String, required: true, unique: true },
    runtimeVersion: { type: String, required: true },
    deploymentMode: { type: String, required: true },
    targetNodeId: { type: String, default: null },
    placementMode: { type: String, default: null },
    nodeSelectorTags: { type: [String], default: [] },
    mailEnabled: { type: Boolean, default: false },
    sleepsWhenIdle: { type: Boolean, default: true },
    status: { type: String, required: true },
    siteUrl: { type: String, required: true },
    adminUrl: { type: String, required: true },
    environment: { type: String, default: 'production' },
    sourceProjectId: { type: String, default: null },
    sourceRecoveryPointId: { type: String, default: null },
    databaseId: { type: String, default: null },
    domain: { type: String, default: null },
    domainStatus: { type: String, default: null },
    domainToken: { type: String, default: null },
    domainExpiresAt: { type: Date, default: null },
    domainUpdatedAt: { type: Date, default: null },
    mailSenderEmail: { type: String, default: null },
    activeOperationId: { type: String, default: null },
    activeOperationAt: { type: Date, default: null },
    fence: { type: String, default: null },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'publisher_sites', versionKey: false },
);
// The hot conditional updates match these unique indexes exactly (decision 0001: any other
// filter is a full scan on the MongoDB-wire server): fenced writes and the lifecycle lock.
siteSchema.index({ _id: 1, fence: 1 }, { unique: true });
siteSchema.index({ databaseId: 1 });
siteSchema.index({ _id: 1, activeOperationId: 1, status: 1 }, { unique: true });

const quotaSchema = new mongoose.Schema<SiteQuotaDoc>(
  { _id: String, hostedSites: { type: Number, required: true }, holders: { type: [String], default: undefined } },
  { collection: 'publisher_site_quota', versionKey: false },
);

const domainClaimSchema = new mongoose.Schema<DomainClaimDoc>(
  {
    _id: String,
    projectId: { type: String, required: true },
    accountId: { type: String, required: true },
    token: { type: String },
    createdAt: { type: Date, required: true },
    expiresAt: { type: Date, default: null },
    verifiedAt: { type: Date, default: null },
  },
  { collection: 'publisher_domain_claims', versionKey: false },
);
// The takeover and verification writes are conditional on the token they read (an exact unique
// index, so the MongoDB-wire server does not scan for them).
domainClaimSchema.index({ _id: 1, projectId: 1, token: 1 }, { unique: true });

const recoveryPointSchema = new mongoose.Schema<RecoveryPointDoc>(
  {
    _id: String,
    accountId: { type: String, required: true },
    projectId: { type: String, required: true },
    kind: { type: String, required: true, enum: RECOVERY_POINT_KINDS },
    reason: { type: String, default: null },
    status: { type: String, required: true },
    runtimeVersion: { type: String, required: true },
    runtimeDigest: { type: String, required: true },
    runtimeImage: { type: String, required: true },
    database: { type: captureSchema, required: true },
    content: { type: captureSchema, required: true },
    release: { type: captureSchema, required: true },
    operationId: { type: String, required: true },
    errorCode: { type: String, default: null },
    createdAt: { type: Date, required: true },
    completedAt: { type: Date, default: null },
  },
  { collection: 'publisher_recovery_points', versionKey: false },
);
// A project's points, newest first.
recoveryPointSchema.index({ projectId: 1, createdAt: -1 });

const newsletterProviderSchema = new mongoose.Schema<NewsletterProviderDoc>(
  {
    _id: String,
    accountId: { type: String, required: true },
    domain: { type: String, required: true },
    region: { type: String, required: true },
    fromEmail: { type: String, required: true },
    fromName: { type: String, default: null },
    apiKeyCiphertext: { type: String, required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'publisher_newsletter_providers', versionKey: false },
);

export interface PublisherModels {
  Site: Model<SiteDoc>;
  SiteQuota: Model<SiteQuotaDoc>;
  DomainClaim: Model<DomainClaimDoc>;
  RecoveryPoint: Model<RecoveryPointDoc>;
  NewsletterProvider: Model<NewsletterProviderDoc>;
}

export function publisherModels(conn: Connection): PublisherModels {
  return {
    Site: model(conn, AREA, 'Site', siteSchema),
    SiteQuota: model(conn, AREA, 'SiteQuota', quotaSchema),
    DomainClaim: model(conn, AREA, 'DomainClaim', domainClaimSchema),
    RecoveryPoint: model(conn, AREA, 'RecoveryPoint', recoveryPointSchema),
    NewsletterProvider: model(conn, AREA, 'NewsletterProvider', newsletterProviderSchema),
  };
}

/** A capture part nobody has taken yet. */
export const pendingCapture = (): CaptureDoc => ({
  status: 'pending',
  snapshotId: null,
  sizeBytes: null,
  sha256: null,
  capturedAt: null,
});
