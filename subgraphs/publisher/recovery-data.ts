import { randomBytes } from 'node:crypto';
import type { Model } from 'mongoose';
import { PlatformError } from '../../core/errors';
import { decryptSecret, encryptSecret } from '../../core/secrets';
import type { DataPlanePort } from '../../dataplane/plane';
import { BackupError, type SealedPart, type SiteBackups, withDatabase } from '../../dataplane/site-backup';
import { withSiteDatabase } from '../../dataplane/site-database';
import type { HostedSite } from '../../dataplane/sites';
import type { CaptureDoc, PublisherModels, RecoveryPointDoc, SiteDoc } from './model';
import type { SiteCredentialsDoc } from './site-credentials';
import type { SiteDatabases } from './site-databases';
import { findRuntime, runtimeSpec } from './runtime-catalog';
import type { StepOutput } from './simulated-infrastructure';

/**
 * The data steps of the real executor (docs/decisions/0150-recovery-point-bytes.md): recovery
 * points capture the site's database, content and release as bytes in the blob store; a restore,
 * a staging copy and an upgrade's rollback put those bytes back while the site is stopped (its
 * hosts answer 503), each part checked against its SHA-256 first.
 */

/**
 * A failure injected into the real executor (tests and operator drills, never set by the API):
 * `step` of `operationType` fails for sites on `version` (default: any), after `before` ran — e.g. a
 * broken release whose health check fails after it already changed the site's data.
 */
export interface RealFault {
  operationType: string;
  step: string;
  version?: string;
  /** How many times it fails (default 1). */
  times?: number;
  code?: string;
  before?: (siteId: string) => Promise<void>;
}

export interface RecoveryDataDeps {
  models: PublisherModels;
  credentials: Model<SiteCredentialsDoc>;
  dataPlane: () => DataPlanePort;
  backups: SiteBackups;
  /** Sites on MySQL: their points hold a logical dump instead of SQLite's online backup (0220). */
  databases?: SiteDatabases;
  aad: (siteId: string, field: string) => string;
}

const STEPS = new Set([
  'capture_database',
  'capture_content',
  'capture_release',
  'restore_database',
  'restore_content',
  'pin_release',
  'rollback',
]);

export class RecoveryData {
  private faults: (RealFault & { times: number })[] = [];
  constructor(private readonly d: RecoveryDataDeps) {}

  static handles(step: string): boolean {
    return STEPS.has(step);
  }

  injectFault(fault: RealFault): void {
    this.faults.push({ ...fault, times: fault.times ?? 1 });
  }

  async faultAt(operationType: string, step: string, version: string, siteId: string): Promise<void> {
    const f = this.faults.find(
      (x) => x.times > 0 && x.operationType === operationType && x.step === step && (!x.version || x.version === version),
    );
    if (!f) return;
    f.times -= 1;
    const why = await f.before?.(siteId).then(
      () => '',
      (e: Error) => ` (its damage failed too: ${e.message})`,
    );
    throw new PlatformError(f.code ?? `${step}_failed`, 500, `injected failure of ${step} on release ${version}${why ?? ''}`);
  }

  async perform(
    operationType: string,
    step: string,
    site: SiteDoc,
    version: string,
    input: unknown,
    hosted: (version: string) => Promise<HostedSite>,
  ): Promise<StepOutput | void> {
    const host = this.d.dataPlane().sites;
    const siteDir = host.siteDir(site._id);
    const b = this.d.backups;
    try {
      switch (step) {
        // A capture reads the release the site runs now (an upgrade captures before it changes it).
        case 'capture_database': {
          const mysql = await this.d.databases?.get(site._id);
          if (mysql) return sealed(await b.captureMysql(mysql));
          const dir = await this.runtimeDir(site.runtimeVersion);
          return sealed(await b.captureDatabase(dir, siteDir));
        }
        case 'capture_content':
          return sealed(await b.captureContent(siteDir));
        case 'capture_release': {
          const r = this.catalogEntry(site.runtimeVersion);
          const part = await b.captureRelease({
            name: runtimeSpec(r).name,
            version: r.version,
            image: r.image,
            digest: r.digest,
          });
          return { captured: { snapshotId: r.digest, sizeBytes: part.sizeBytes, sha256: part.sha256 } };
        }
        case 'restore_database': {
          const point = await this.point(input);
          this.markRestoring(site._id);
          await this.restoreDatabase(site._id, part(point, 'database'), siteDir);
          if (operationType === 'staging') await this.rekeyCopy(site, point);
          return;
        }
        case 'restore_content': {
          const point = await this.point(input);
          this.markRestoring(site._id);
          await b.restoreContent(part(point, 'content'), siteDir);
          return;
        }
        case 'pin_release': {
          const point = await this.point(input);
          const manifest = await b.readRelease(part(point, 'release'));
          const r = this.catalogEntry(manifest.version);
          if (r.digest !== manifest.digest || r.version !== point.runtimeVersion)
            throw new PlatformError(
              'release_mismatch',
              500,
              `the point pins ${manifest.image} (${manifest.digest}), not the catalog's release`,
            );
          await host.pullRuntime(runtimeSpec(r));
          return;
        }
        case 'rollback': {
          // Back to the pre-upgrade point: the target's process goes, the point's data comes back,
          // and the old release starts on it (never the migrated database).
          const point = await this.point(input);
          if (host.isHosted(site._id)) await host.stop(site._id);
          this.markRestoring(site._id);
          await this.restoreDatabase(site._id, part(point, 'database'), siteDir);
          await b.restoreContent(part(point, 'content'), siteDir);
          await host.start(await hosted(version));
          return;
        }
      }
    } catch (e) {
      if (e instanceof BackupError) throw new PlatformError(e.code, 500, e.message);
      if (e instanceof PlatformError) throw e;
      throw new PlatformError(`${step}_failed`, 500, (e as Error).message);
    }
  }

  /** The point's database into the site's own: its MySQL database, or its SQLite file. */
  private async restoreDatabase(siteId: string, p: SealedPart, siteDir: string): Promise<void> {
    const mysql = await this.d.databases?.get(siteId);
    if (mysql) await this.d.backups.restoreMysql(p, mysql, siteDir);
    else await this.d.backups.restoreDatabase(p, siteDir);
  }

  private markRestoring(siteId: string): void {
    const host = this.d.dataPlane().sites;
    if (host.isHosted(siteId)) host.markRestoring(siteId);
  }

  private async runtimeDir(version: string): Promise<string> {
    return (await this.d.dataPlane().sites.pullRuntime(runtimeSpec(this.catalogEntry(version)))).dir;
  }

  /** The site's SQLite file, where its runtime's driver keeps it on this node. */
  private databaseFile(site: SiteDoc): string {
    const file = this.d.dataPlane().sites.layout(site._id, runtimeSpec(this.catalogEntry(site.runtimeVersion)).name).database;
    if (!file) throw new PlatformError('site_setup_failed', 500, `the runtime of site ${site._id} keeps no database file`);
    return file;
  }

  private catalogEntry(version: string) {
    const r = findRuntime(version);
    if (!r) throw new PlatformError('release_unknown', 500, `runtime ${version} is not in the catalog`);
    return r;
  }

  private async point(input: unknown): Promise<RecoveryPointDoc> {
    const id = (input as { recoveryPointId?: string } | null)?.recoveryPointId;
    const point = id ? await this.d.models.RecoveryPoint.findById(id).lean() : null;
    if (!point) throw new PlatformError('recovery_point_not_found', 500, `recovery point ${id} not found`);
    return point;
  }

  /**
   * A staging copy gets its own access: the platform's integration in the copied database gets a
   * new Admin and Content API key (the source's keys do not open the copy), the copied sessions
   * are dropped, and the copy's credentials are sealed under its own id. The owner is the source's.
   */
  private async rekeyCopy(copy: SiteDoc, point: RecoveryPointDoc): Promise<void> {
    const source = await this.d.credentials.findById(point.projectId).lean();
    if (!source) throw new PlatformError('site_setup_failed', 500, 'the source site has no platform integration to copy');
    const adminId = randomBytes(12).toString('hex');
    const adminSecret = randomBytes(32).toString('hex');
    const mysql = await this.d.databases?.get(copy._id);
    const session = mysql
      ? <T>(fn: Parameters<typeof withSiteDatabase<T>>[1]) => withSiteDatabase(mysql, fn)
      : async <T>(fn: Parameters<typeof withSiteDatabase<T>>[1]) =>
          withDatabase(await this.runtimeDir(copy.runtimeVersion), this.databaseFile(copy), fn);
    await session(async (db) => {
      const found = await db.get<{ id: string }>(
        "SELECT id FROM api_keys WHERE integration_id = ? AND type = 'admin'",
        source.integrationId,
      );
      if (!found) throw new PlatformError('site_setup_failed', 500, 'the copied database has no platform integration');
      await db.run(
        "UPDATE api_keys SET id = ?, secret = ? WHERE integration_id = ? AND type = 'admin'",
        adminId,
        adminSecret,
        source.integrationId,
      );
      await db.run(
        "UPDATE api_keys SET id = ?, secret = ? WHERE integration_id = ? AND type = 'content'",
        randomBytes(12).toString('hex'),
        randomBytes(13).toString('hex'),
        source.integrationId,
      );
      await db.run('DELETE FROM sessions');
    });
    const aad = this.d.aad;
    const ownerPassword = decryptSecret(source.ownerPasswordCiphertext, aad(source._id, 'owner_password'));
    await this.d.credentials.replaceOne(
      { _id: copy._id },
      {
        _id: copy._id,
        accountId: copy.accountId,
        ownerEmail: source.ownerEmail,
        integrationId: source.integrationId,
        adminApiKeyCiphertext: encryptSecret(`${adminId}:${adminSecret}`, aad(copy._id, 'admin_api_key')),
        ownerPasswordCiphertext: encryptSecret(ownerPassword, aad(copy._id, 'owner_password')),
        createdAt: new Date(),
      },
      { upsert: true },
    );
  }
}

const sealed = (p: SealedPart): StepOutput => ({ captured: { snapshotId: p.sha256, sizeBytes: p.sizeBytes, sha256: p.sha256 } });

/** The sealed bytes of one part; a point captured by the simulated executor has none. */
function part(point: RecoveryPointDoc, name: 'database' | 'content' | 'release'): SealedPart {
  const c: CaptureDoc = point[name];
  if (point.status !== 'completed' || c.status !== 'captured' || !c.sha256 || c.sizeBytes === null)
    throw new PlatformError('recovery_point_incomplete', 500, `recovery point ${point._id} holds no ${name} bytes`);
  return { sha256: c.sha256, sizeBytes: c.sizeBytes };
}
