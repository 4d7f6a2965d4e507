import mongoose, { type Connection, type Model } from 'mongoose';
import { PlatformError, retriable } from '../../core/errors';
import { model } from '../../core/mongo';
import { decryptSecret, encryptSecret } from '../../core/secrets';
import {
  allocateSiteDatabase,
  dropSiteDatabase,
  type MysqlSiteDatabase,
  newDatabasePassword,
  parseMysqlUrl,
  siteDatabaseName,
  siteUserName,
} from '../../dataplane/site-database';

/**
 * Which database each hosted site uses (docs/decisions/0220-mysql-adapter.md). With
 * `PUBLISHER_MYSQL_URL` set, the `allocate_database` step creates the site's MySQL database and user
 * and records them here, the user's password sealed with core/secrets.ts (bound to the site, never
 * in a response or a log); a site with no record uses its embedded SQLite file. The record, not the
 * setting, decides afterwards: a site keeps the database it was given, and `delete_site` drops it.
 */
export interface SiteDatabaseDoc {
  _id: string;
  client: 'mysql';
  host: string;
  port: number;
  database: string;
  user: string;
  passwordCiphertext: string;
  createdAt: Date;
}

const schema = new mongoose.Schema<SiteDatabaseDoc>(
  {
    _id: String,
    client: { type: String, required: true },
    host: { type: String, required: true },
    port: { type: Number, required: true },
    database: { type: String, required: true },
    user: { type: String, required: true },
    passwordCiphertext: { type: String, required: true },
    createdAt: { type: Date, required: true },
  },
  { collection: 'publisher_site_databases', versionKey: false },
);

export function siteDatabaseModel(conn: Connection): Model<SiteDatabaseDoc> {
  return model(conn, 'publisher', 'SiteDatabase', schema);
}

const passwordAad = (siteId: string) => `publisher.site_databases:${siteId}:password`;

export class SiteDatabases {
  constructor(
    private readonly docs: Model<SiteDatabaseDoc>,
    /** `PUBLISHER_MYSQL_URL`, read at call time (unset: sites use SQLite). */
    private readonly adminUrl: () => string | undefined,
  ) {}

  /** The `allocate_database` step: a MySQL database and user for the site when MySQL is configured. */
  async allocate(siteId: string): Promise<void> {
    const url = this.adminUrl();
    if (!url) return;
    const admin = parseMysqlUrl(url);
    // A retried step reuses the sealed password, so the user it created keeps working.
    const existing = await this.docs.findById(siteId).lean();
    const password = existing ? decryptSecret(existing.passwordCiphertext, passwordAad(siteId)) : newDatabasePassword();
    if (!existing)
      await this.docs.create({
        _id: siteId,
        client: 'mysql',
        host: admin.host,
        port: admin.port,
        database: siteDatabaseName(siteId),
        user: siteUserName(siteId),
        passwordCiphertext: encryptSecret(password, passwordAad(siteId)),
        createdAt: new Date(),
      });
    try {
      await allocateSiteDatabase(admin, siteId, password);
    } catch (e) {
      throw retriable('database_allocation_failed', `creating the site's MySQL database failed: ${(e as Error).message}`);
    }
  }

  /** The site's MySQL database with its password opened, or null for a SQLite site. */
  async get(siteId: string): Promise<MysqlSiteDatabase | null> {
    const doc = await this.docs.findById(siteId).lean();
    if (!doc) return null;
    return {
      host: doc.host,
      port: doc.port,
      database: doc.database,
      user: doc.user,
      password: decryptSecret(doc.passwordCiphertext, passwordAad(siteId)),
    };
  }

  /** The `delete_site` step: drops the site's database and user, then the record. */
  async drop(siteId: string): Promise<void> {
    const doc = await this.docs.findById(siteId).lean();
    if (!doc) return;
    const url = this.adminUrl();
    if (!url)
      throw new PlatformError(
        'database_drop_failed',
        500,
        `site ${siteId} has a MySQL database but PUBLISHER_MYSQL_URL is not set; it cannot be dropped`,
      );
    try {
      await dropSiteDatabase(parseMysqlUrl(url), siteId);
    } catch (e) {
      throw retriable('database_drop_failed', `dropping the site's MySQL database failed: ${(e as Error).message}`);
    }
    await this.docs.deleteOne({ _id: siteId });
  }
}
