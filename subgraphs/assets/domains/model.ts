import { type Connection, type Model, Schema } from 'mongoose';
import { model } from '../../../core/mongo';

/** A custom domain's states: `pending` until its TXT token is seen, then `verified`. */
export const DOMAIN_STATUSES = ['pending', 'verified'] as const;
export type DomainStatus = (typeof DOMAIN_STATUSES)[number];

export interface DomainDoc {
  _id: string;
  accountId: string;
  bucketId: string;
  /** Lowercase ASCII host name (core/domain-names.ts). */
  hostname: string;
  status: DomainStatus;
  /** The random part of the TXT value the owner publishes. */
  token: string;
  /**
   * The host name, set only once verified: a unique sparse index makes one verified owner per host
   * (several accounts may claim a host while pending; the first to prove it wins).
   */
  verifiedHost?: string | null;
  verifiedAt: Date | null;
  lastCheckedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

const domainSchema = new Schema<DomainDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    bucketId: { type: String, required: true },
    hostname: { type: String, required: true },
    status: { type: String, required: true, enum: DOMAIN_STATUSES },
    token: { type: String, required: true },
    verifiedHost: { type: String },
    verifiedAt: { type: Date, default: null },
    lastCheckedAt: { type: Date, default: null },
    createdAt: Date,
    updatedAt: Date,
  },
  { collection: 'asset_domains', versionKey: false, minimize: false },
);
domainSchema.index({ accountId: 1, hostname: 1 }, { unique: true, name: 'domain_account_host' });
// The CDN resolves a `Host` with this exact unique filter (no scan on the wire server).
domainSchema.index({ verifiedHost: 1 }, { unique: true, sparse: true, name: 'domain_verified_host' });

export const domainModel = (conn: Connection): Model<DomainDoc> => model(conn, 'assets', 'Domain', domainSchema);
