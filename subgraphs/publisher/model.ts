import mongoose, { type Connection, type Model } from 'mongoose';

/** Stored lifecycle states; `provision_failed` and friends are derived from the active operation. */
export type StoredSiteStatus = 'provisioning' | 'running' | 'stopped';

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
  status: StoredSiteStatus;
  siteUrl: string;
  adminUrl: string;
  domain: string | null;
  /** The lifecycle operation holding the site's lock; a terminal or missing one frees it. */
  activeOperationId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** Per-account count of hosted sites, incremented conditionally so a plan limit holds under races. */
export interface SiteQuotaDoc {
  _id: string;
  hostedSites: number;
}

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
    status: { type: String, required: true },
    siteUrl: { type: String, required: true },
    adminUrl: { type: String, required: true },
    domain: { type: String, default: null },
    activeOperationId: { type: String, default: null },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'publisher_sites', versionKey: false },
);

const quotaSchema = new mongoose.Schema<SiteQuotaDoc>(
  { _id: String, hostedSites: { type: Number, required: true } },
  { collection: 'publisher_site_quota', versionKey: false },
);

export interface PublisherModels {
  Site: Model<SiteDoc>;
  SiteQuota: Model<SiteQuotaDoc>;
}

export function publisherModels(conn: Connection): PublisherModels {
  return {
    Site: (conn.models.PublisherSite as Model<SiteDoc>) ?? conn.model('PublisherSite', siteSchema),
    SiteQuota: (conn.models.PublisherSiteQuota as Model<SiteQuotaDoc>) ?? conn.model('PublisherSiteQuota', quotaSchema),
  };
}
