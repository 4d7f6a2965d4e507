import { type Connection, type Model, Schema } from 'mongoose';
import { model } from '../../../core/mongo';

export const CONNECTION_TYPES = ['s3', 'http'] as const;
export type ConnectionType = (typeof CONNECTION_TYPES)[number];
/** `unverified` until POST /verify; then `verified` or `failed` (the last check's outcome). */
export const CONNECTION_STATUSES = ['unverified', 'verified', 'failed'] as const;

/** Names of the write-only values per type (accepted on create and update, never returned). */
export const SECRET_FIELDS: Record<ConnectionType, readonly string[]> = {
  s3: ['secret_access_key'],
  http: ['bearer_token'],
};

export interface ConnectionDoc {
  _id: string;
  accountId: string;
  name: string;
  type: ConnectionType;
  /** The non-secret settings, snake_case as in the API (validated per type in config.ts). */
  config: Record<string, unknown>;
  /** Sealed write-only values (core/secrets.ts), by field name; never selected by GraphQL. */
  secrets: Record<string, string>;
  status: (typeof CONNECTION_STATUSES)[number];
  lastVerifiedAt: Date | null;
  lastError: string | null;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}

const connectionSchema = new Schema<ConnectionDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    name: { type: String, required: true },
    type: { type: String, required: true, enum: CONNECTION_TYPES },
    config: { type: Schema.Types.Mixed, default: () => ({}) },
    secrets: { type: Schema.Types.Mixed, default: () => ({}) },
    status: { type: String, required: true, enum: CONNECTION_STATUSES },
    lastVerifiedAt: { type: Date, default: null },
    lastError: { type: String, default: null },
    revision: { type: Number, required: true },
    createdAt: Date,
    updatedAt: Date,
  },
  { collection: 'asset_connections', versionKey: false, minimize: false },
);
connectionSchema.index({ accountId: 1, name: 1 }, { unique: true, name: 'connection_name' });

export const connectionModel = (conn: Connection): Model<ConnectionDoc> => model(conn, 'assets', 'Connection', connectionSchema);
