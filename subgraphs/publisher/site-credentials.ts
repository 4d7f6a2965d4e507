import mongoose, { type Connection, type Model } from 'mongoose';
import { model } from '../../core/mongo';

/**
 * What the platform keeps of a site it set up (docs/decisions/0270-node-tokens-and-task-secrets.md):
 * the Admin API key and the owner's password that the node's `configure_site` answered, sealed with
 * the platform's key for this site and field. Read by the operator's `platform sites admin-key`,
 * a staging copy's re-keying and the secret scans; never served by the API.
 */

/** The platform's access to a site it set up: the Admin API key and the owner's password, sealed. */
export interface SiteCredentialsDoc {
  _id: string;
  accountId: string;
  ownerEmail: string;
  integrationId: string;
  adminApiKeyCiphertext: string;
  ownerPasswordCiphertext: string;
  createdAt: Date;
}

const credentialsSchema = new mongoose.Schema<SiteCredentialsDoc>(
  {
    _id: String,
    accountId: { type: String, required: true },
    ownerEmail: { type: String, required: true },
    integrationId: { type: String, required: true },
    adminApiKeyCiphertext: { type: String, required: true },
    ownerPasswordCiphertext: { type: String, required: true },
    createdAt: { type: Date, required: true },
  },
  { collection: 'publisher_site_credentials', versionKey: false },
);

export function siteCredentialsModel(conn: Connection): Model<SiteCredentialsDoc> {
  return model(conn, 'publisher', 'SiteCredentials', credentialsSchema);
}

/** What binds a sealed credential to its site and field: copied elsewhere, it does not open. */
export const aad = (siteId: string, field: string) => `publisher.site_credentials:${siteId}:${field}`;
