import { type Connection, type Model, Schema } from 'mongoose';
import { model } from '../../../core/mongo';

/**
 * Documents of the object-store bucket operations (decision 0029). Every read or write the
 * hot paths make names a document by its `_id` (decision 0001: only an exact unique index avoids a
 * scan on the MongoDB-wire server).
 */

/** An Assets bucket that is also an object-store event source; `_id` is the bucket id. */
export interface ObjstoreBucketDoc {
  _id: string;
  accountId: string;
  /** Website mode (null = off): objects served on the CDN under `/w/{bucketID}/…`. */
  website: { indexObject: string; errorObject: string | null } | null;
  createdAt: Date;
  updatedAt: Date;
}

const objstoreBucketSchema = new Schema<ObjstoreBucketDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    website: { type: Schema.Types.Mixed, default: null },
    createdAt: Date,
    updatedAt: Date,
  },
  { collection: 'asset_objstore_buckets', versionKey: false, minimize: false },
);
objstoreBucketSchema.index({ accountId: 1, createdAt: 1 });

export const RELOCATION_STATUSES = ['queued', 'copying', 'switching', 'succeeded', 'failed'] as const;
export type RelocationStatus = (typeof RELOCATION_STATUSES)[number];

/** A relocation job: copies every version's bytes into `toRegion`, verifies, then switches. */
export interface RelocationDoc {
  _id: string;
  accountId: string;
  bucketId: string;
  fromRegion: string;
  toRegion: string;
  status: RelocationStatus;
  /** Set to the bucket id while the job is not finished: a unique sparse index makes it one at a time. */
  activeBucket?: string;
  objectsTotal: number;
  objectsCopied: number;
  bytesCopied: number;
  objectsSwitched: number;
  error: string | null;
  createdAt: Date;
  updatedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

const relocationSchema = new Schema<RelocationDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    bucketId: { type: String, required: true },
    fromRegion: String,
    toRegion: String,
    status: { type: String, required: true },
    activeBucket: { type: String },
    objectsTotal: { type: Number, default: 0 },
    objectsCopied: { type: Number, default: 0 },
    bytesCopied: { type: Number, default: 0 },
    objectsSwitched: { type: Number, default: 0 },
    error: { type: String, default: null },
    createdAt: Date,
    updatedAt: Date,
    startedAt: { type: Date, default: null },
    finishedAt: { type: Date, default: null },
  },
  { collection: 'asset_bucket_relocations', versionKey: false, minimize: false },
);
relocationSchema.index({ activeBucket: 1 }, { unique: true, sparse: true, name: 'relocation_active' });

/** Counters of one bucket and UTC day: `_id` = `<bucketId>:<YYYY-MM-DD>`, grown by `$inc` only. */
export interface BucketDayDoc {
  _id: string;
  accountId: string;
  bucketId: string;
  day: string;
  requests: number;
  errors: number;
  bytesIn: number;
  bytesOut: number;
  /** Requests per top-level key prefix (`img/`, or `` for keys without `/`), the key escaped. */
  prefixes: Record<string, number>;
}

const bucketDaySchema = new Schema<BucketDayDoc>(
  {
    _id: { type: String, required: true },
    accountId: String,
    bucketId: String,
    day: String,
    requests: { type: Number, default: 0 },
    errors: { type: Number, default: 0 },
    bytesIn: { type: Number, default: 0 },
    bytesOut: { type: Number, default: 0 },
    prefixes: { type: Schema.Types.Mixed, default: () => ({}) },
  },
  { collection: 'asset_bucket_days', versionKey: false, minimize: false, suppressReservedKeysWarning: true },
);

export const ACCESS_OPERATIONS = ['get_object', 'head_object', 'put_object', 'replace_object'] as const;
export type AccessOperation = (typeof ACCESS_OPERATIONS)[number];

export interface AccessLogDoc {
  _id: string;
  accountId: string;
  bucketId: string;
  operation: AccessOperation;
  key: string | null;
  status: number;
  bytesIn: number;
  bytesOut: number;
  requestId: string;
  accessKeyId: string | null;
  at: Date;
}

const accessLogSchema = new Schema<AccessLogDoc>(
  {
    _id: { type: String, required: true },
    accountId: String,
    bucketId: String,
    operation: String,
    key: { type: String, default: null },
    status: Number,
    bytesIn: Number,
    bytesOut: Number,
    requestId: String,
    accessKeyId: { type: String, default: null },
    at: Date,
  },
  { collection: 'asset_bucket_access_logs', versionKey: false },
);
accessLogSchema.index({ bucketId: 1, at: -1, _id: -1 });

export const INVENTORY_FORMATS = ['csv', 'jsonl'] as const;
export type InventoryFormat = (typeof INVENTORY_FORMATS)[number];
export const INVENTORY_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const;

export interface InventoryExportDoc {
  _id: string;
  accountId: string;
  bucketId: string;
  format: InventoryFormat;
  prefix: string | null;
  status: (typeof INVENTORY_STATUSES)[number];
  rowCount: number | null;
  size: number | null;
  sha256: string | null;
  region: string | null;
  error: string | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

const inventorySchema = new Schema<InventoryExportDoc>(
  {
    _id: { type: String, required: true },
    accountId: String,
    bucketId: String,
    format: String,
    prefix: { type: String, default: null },
    status: String,
    rowCount: { type: Number, default: null },
    size: { type: Number, default: null },
    sha256: { type: String, default: null },
    region: { type: String, default: null },
    error: { type: String, default: null },
    createdAt: Date,
    updatedAt: Date,
    finishedAt: { type: Date, default: null },
  },
  { collection: 'asset_inventory_exports', versionKey: false, minimize: false },
);
inventorySchema.index({ bucketId: 1, createdAt: -1 });

export interface BucketOpsModels {
  ObjstoreBucket: Model<ObjstoreBucketDoc>;
  Relocation: Model<RelocationDoc>;
  BucketDay: Model<BucketDayDoc>;
  AccessLog: Model<AccessLogDoc>;
  InventoryExport: Model<InventoryExportDoc>;
}

export function bucketOpsModels(conn: Connection): BucketOpsModels {
  return {
    ObjstoreBucket: model(conn, 'assets', 'ObjstoreBucket', objstoreBucketSchema),
    Relocation: model(conn, 'assets', 'BucketRelocation', relocationSchema),
    BucketDay: model(conn, 'assets', 'BucketDay', bucketDaySchema),
    AccessLog: model(conn, 'assets', 'BucketAccessLog', accessLogSchema),
    InventoryExport: model(conn, 'assets', 'InventoryExport', inventorySchema),
  };
}
