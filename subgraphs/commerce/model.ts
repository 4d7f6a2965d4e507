import mongoose, { type Connection, type Model } from 'mongoose';
import { model } from '../../core/mongo';
import type { ConnectionKind, EnvironmentName, ReleaseStatus } from './limits';

/** One connection per project: `_id` is the project id, so every read is an exact key lookup. */
/**
 * The environment a release was deployed with, pinned: later edits reach it only by a new deploy.
 * Its secrets stay sealed for the environment record they belong to (commerce/runtime.ts opens them
 * only to build the process environment).
 */
export interface EnvironmentPin {
  environmentId: string;
  revision: number;
  fields: Record<string, string | null>;
  secrets: Record<string, string>;
}

export interface ConnectionDoc {
  _id: string;
  accountId: string;
  kind: ConnectionKind;
  storeDomain: string;
  developmentBranch: string | null;
  confirmGenericStorefront: boolean;
  /** Documented connect settings only (never credentials). */
  settings: Record<string, unknown>;
  storefrontSettings: Record<string, unknown>;
  /** The latest connect operation; its outcome decides `pending` / `invalid`. */
  connectOperationId: string;
  createdAt: Date;
  updatedAt: Date;
}

export type VerificationStatus = 'pending' | 'ready' | 'invalid';

export interface EnvironmentDoc {
  /** `${projectId}:${name}`. */
  _id: string;
  projectId: string;
  name: EnvironmentName;
  /** The non-secret fields, by their REST names (`app_url`, `client_id`, …). */
  fields: Record<string, string | null>;
  /** Write-only secrets by REST name, each sealed with AES-256-GCM (`core/secrets.ts`). */
  secrets: Record<string, string>;
  /** `memory_mb`: its releases' memory limit in MiB; null or absent: the default (`DEFAULT_RELEASE_MEMORY_MB`). */
  memoryMb?: number | null;
  /** Bumped by every update; a verification is bound to the revision it was requested at. */
  revision: number;
  verification: {
    status: VerificationStatus;
    operationId: string | null;
    /** The revision the last verification checked. */
    revision: number | null;
    errorCode: string | null;
    verifiedAt: Date | null;
  };
  createdAt: Date;
  updatedAt: Date;
}

export interface ReleaseDoc {
  _id: string;
  projectId: string;
  accountId: string;
  environment: EnvironmentName;
  status: ReleaseStatus;
  /** Where the release's health endpoint answers (the stand-in serves it here). */
  healthUrl: string;
  deploymentId: string;
  /** For preview releases: the id a promotion names. */
  previewId: string | null;
  /** For promoted releases: the preview they came from. */
  sourcePreviewId: string | null;
  operationId: string;
  attempts: number;
  errorCode: string | null;
  errorMessage: string | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
  /** A release deployed from a bundle: its artifact's SHA-256 (docs/decisions/0130-commerce-runtime.md). */
  artifact?: string | null;
  /** The environment as it was when the release was created (sealed secrets stay sealed). */
  environmentPin?: EnvironmentPin | null;
  /** A bundle release's memory limit in MiB, from its environment when it was created (kept like `environmentPin`). */
  memoryMb?: number | null;
  /** The bundle release the project's production address points at (started again when the platform starts). */
  live?: boolean;
}

export interface WebhookObservationDoc {
  _id: string;
  projectId: string;
  webhookId: string;
  topic: string;
  storeDomain: string;
  /** The verified body, parsed (kept up to 16 KiB; larger bodies keep only their size). */
  payload: unknown;
  bodyBytes: number;
  receivedAt: Date;
}

/** Recorded storefront requests (one document per recording; summed into buckets on read). */
export interface TrafficDoc {
  _id: string;
  projectId: string;
  at: Date;
  requests: number;
  errors: number;
}

const Mixed = mongoose.Schema.Types.Mixed;
const base = { versionKey: false as const, minimize: false };

const connectionSchema = new mongoose.Schema<ConnectionDoc>(
  {
    _id: String,
    accountId: { type: String, required: true },
    kind: { type: String, required: true },
    storeDomain: { type: String, required: true },
    developmentBranch: { type: String, default: null },
    confirmGenericStorefront: { type: Boolean, default: false },
    settings: { type: Mixed, default: {} },
    storefrontSettings: { type: Mixed, default: {} },
    connectOperationId: { type: String, required: true },
    createdAt: Date,
    updatedAt: Date,
  },
  { ...base, collection: 'commerce_connections' },
);
// Inbound webhooks find the connections of a store.
connectionSchema.index({ storeDomain: 1 });

const environmentSchema = new mongoose.Schema<EnvironmentDoc>(
  {
    _id: String,
    projectId: { type: String, required: true },
    name: { type: String, required: true },
    fields: { type: Mixed, default: {} },
    secrets: { type: Mixed, default: {} },
    memoryMb: { type: Number, default: null },
    revision: { type: Number, required: true },
    verification: {
      status: { type: String, default: 'pending' },
      operationId: { type: String, default: null },
      revision: { type: Number, default: null },
      errorCode: { type: String, default: null },
      verifiedAt: { type: Date, default: null },
    },
    createdAt: Date,
    updatedAt: Date,
  },
  { ...base, collection: 'commerce_environments' },
);
environmentSchema.index({ projectId: 1 });

const releaseSchema = new mongoose.Schema<ReleaseDoc>(
  {
    _id: String,
    projectId: { type: String, required: true },
    accountId: { type: String, required: true },
    environment: { type: String, required: true },
    status: { type: String, required: true },
    healthUrl: { type: String, required: true },
    deploymentId: { type: String, required: true },
    previewId: { type: String, default: null },
    sourcePreviewId: { type: String, default: null },
    operationId: { type: String, required: true },
    attempts: { type: Number, default: 1 },
    errorCode: { type: String, default: null },
    errorMessage: { type: String, default: null },
    createdAt: Date,
    updatedAt: Date,
    finishedAt: { type: Date, default: null },
    artifact: { type: String, default: null },
    environmentPin: { type: Mixed, default: null },
    memoryMb: { type: Number, default: null },
    live: { type: Boolean, default: false },
  },
  { ...base, collection: 'commerce_releases' },
);
releaseSchema.index({ projectId: 1, createdAt: -1 });
// The platform's start finds the live release of each project.
releaseSchema.index({ live: 1 });
// The artifact sweep asks whether any release names an artifact.
releaseSchema.index({ artifact: 1 });

const webhookSchema = new mongoose.Schema<WebhookObservationDoc>(
  {
    _id: String,
    projectId: { type: String, required: true },
    webhookId: { type: String, required: true },
    topic: String,
    storeDomain: String,
    payload: Mixed,
    bodyBytes: Number,
    receivedAt: Date,
  },
  { ...base, collection: 'commerce_webhook_observations' },
);
webhookSchema.index({ projectId: 1, receivedAt: -1 });

const trafficSchema = new mongoose.Schema<TrafficDoc>(
  { _id: String, projectId: { type: String, required: true }, at: Date, requests: Number, errors: Number },
  // `errors` is the spec's word (analytics buckets); documents here are never hydrated, only read lean.
  { ...base, collection: 'commerce_traffic', suppressReservedKeysWarning: true },
);
trafficSchema.index({ projectId: 1, at: 1 });

/** A stored release artifact (subgraphs/commerce/artifacts.ts): its bytes are in the blob store under `_id`. */
export interface ArtifactDoc {
  /** The archive's SHA-256. */
  _id: string;
  createdAt: Date;
  /** Last uploaded or deployed by any of its owners: the retention sweep counts from here. */
  usedAt: Date;
  /** The archive's size; absent on records made before ownership (decision 0271), which `adoptUnowned` fills. */
  bytes?: number | null;
}

const artifactSchema = new mongoose.Schema<ArtifactDoc>(
  { _id: String, createdAt: Date, usedAt: Date, bytes: Number },
  { ...base, collection: 'commerce_artifacts' },
);
artifactSchema.index({ usedAt: 1 });

/**
 * An account's hold on an artifact (docs/decisions/0271-artifact-ownership.md): made by its own
 * upload (or `commerce deploy --bundle` for one of its projects). Only a holder may release the
 * artifact; the account's holds are what its artifact quota counts.
 */
export interface ArtifactOwnerDoc {
  /** `${accountId}:${sha256}`, so the check at release creation is an exact key lookup. */
  _id: string;
  accountId: string;
  artifact: string;
  bytes: number;
  createdAt: Date;
  /** Last uploaded or deployed by this account: the per-owner retention counts from here. */
  usedAt: Date;
}

const artifactOwnerSchema = new mongoose.Schema<ArtifactOwnerDoc>(
  {
    _id: String,
    accountId: { type: String, required: true },
    artifact: { type: String, required: true },
    bytes: { type: Number, required: true },
    createdAt: Date,
    usedAt: Date,
  },
  { ...base, collection: 'commerce_artifact_owners' },
);
// The quota sums an account's holds; the sweep finds old holds and asks whether an artifact has any.
artifactOwnerSchema.index({ accountId: 1 });
artifactOwnerSchema.index({ artifact: 1 });
artifactOwnerSchema.index({ usedAt: 1 });

export interface CommerceModels {
  Artifact: Model<ArtifactDoc>;
  ArtifactOwner: Model<ArtifactOwnerDoc>;
  Connection: Model<ConnectionDoc>;
  Environment: Model<EnvironmentDoc>;
  Release: Model<ReleaseDoc>;
  Webhook: Model<WebhookObservationDoc>;
  Traffic: Model<TrafficDoc>;
}

export function commerceModels(conn: Connection): CommerceModels {
  return {
    Artifact: model(conn, 'commerce', 'Artifact', artifactSchema),
    ArtifactOwner: model(conn, 'commerce', 'ArtifactOwner', artifactOwnerSchema),
    Connection: model(conn, 'commerce', 'Connection', connectionSchema),
    Environment: model(conn, 'commerce', 'Environment', environmentSchema),
    Release: model(conn, 'commerce', 'Release', releaseSchema),
    Webhook: model(conn, 'commerce', 'WebhookObservation', webhookSchema),
    Traffic: model(conn, 'commerce', 'Traffic', trafficSchema),
  };
}
