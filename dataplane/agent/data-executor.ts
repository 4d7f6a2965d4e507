import type { SiteHost } from '../sites';
import { BackupError, type SealedPart, type SiteBackups, type SiteFiles, withDatabase } from '../site-backup';
import { type MysqlSiteDatabase, withSiteDatabase } from '../site-database';
import { hosted, type SiteExtras, StepFailure } from './executors';
import type { AgentSite, AgentTask, SiteDataWork, SiteExtrasValue } from './wire';

/**
 * A hosted site's data steps on its node (docs/decisions/0360-data-steps-on-the-node.md,
 * 0150-recovery-point-bytes.md): a recovery point's capture, a restore, a staging copy's own access
 * and an upgrade's rollback, run by the agent on its own data plane with the site's runtime driver
 * (`layout` says where the database and content are, `rekey` gives a copy its own access) and the
 * recovery store, where a point's bytes go and come from (through the agent API's part calls of the
 * task, 0375-recovery-parts-over-the-agent-api.md), each part checked against its SHA-256.
 * The task says what to do (the point's parts, the release to seal or pin, the integration to
 * re-key); the platform keeps the point's record.
 *
 * A capture reads the site's files and never wakes a sleeping site; a restore replaces them while
 * the site is stopped (its hosts answer 503 `restoring`); its next step starts it.
 */
export class SiteDataExecutor {
  constructor(
    private readonly host: SiteHost,
    /**
     * Where recovery points keep their bytes, for a task: over the agent API's part calls of that
     * task (dataplane/agent/recovery-parts.ts; docs/decisions/0375), or one store for every task.
     */
    private readonly backups: SiteBackups | ((taskId: string) => SiteBackups),
    /** The site's MySQL database and mail configuration, where the platform keeps them (as the machine steps'). */
    private readonly siteExtras?: SiteExtras,
  ) {}

  async run(task: AgentTask): Promise<Record<string, unknown> | null> {
    const work = task.data ?? {};
    try {
      const b = typeof this.backups === 'function' ? this.backups(task.id) : this.backups;
      // The site's extras (over the agent API for an agent outside the platform) are read once a step.
      let extras: Promise<SiteExtrasValue | undefined> | undefined;
      const extrasOnce = () => (extras ??= Promise.resolve(this.siteExtras?.(task.site.siteId)));
      return await this.step(b, task.step, task.site, work, extrasOnce);
    } catch (e) {
      if (e instanceof StepFailure) throw e;
      if (e instanceof BackupError) throw new StepFailure(e.code, e.message);
      throw new StepFailure(`${task.step}_failed`, (e as Error).message);
    }
  }

  private async step(
    b: SiteBackups,
    step: string,
    site: AgentSite,
    work: SiteDataWork,
    extras: () => Promise<SiteExtrasValue | undefined>,
  ): Promise<Record<string, unknown> | null> {
    const files = this.files(site);
    const mysql = async () => (await extras())?.database;
    switch (step) {
      case 'capture_database': {
        const db = await mysql();
        return sealed(db ? await b.captureMysql(db) : await b.captureDatabase(await this.runtimeDir(site), files));
      }
      case 'capture_content':
        return sealed(await b.captureContent(files));
      case 'capture_release':
        return sealed(await b.captureRelease(need(work.release, 'the release to seal')));
      case 'restore_database': {
        this.markRestoring(site.siteId);
        const db = await mysql();
        await this.restoreDatabase(b, db, need(work.point?.database, "the point's database"), files);
        return work.rekey ? await this.rekey(site, db, files, work.rekey.integrationId) : null;
      }
      case 'restore_content':
        this.markRestoring(site.siteId);
        await b.restoreContent(need(work.point?.content, "the point's content"), files);
        return null;
      case 'pin_release': {
        // The release the point sealed is the one it should pin; then it is installed here.
        const manifest = await b.readRelease(need(work.point?.release, "the point's release"));
        const want = need(work.release, 'the release to pin');
        if (manifest.digest !== want.digest || manifest.version !== want.version)
          throw new StepFailure(
            'release_mismatch',
            `the point pins ${manifest.image} (${manifest.digest}), not the catalog's release`,
          );
        await this.host.pullRuntime(hosted(site).runtime);
        return null;
      }
      case 'rollback': {
        // Back to the pre-upgrade point: the target's process goes, the point's data comes back, and
        // the old release (the task's) starts on it, never on the migrated database.
        if (this.host.isHosted(site.siteId)) await this.host.stop(site.siteId);
        this.markRestoring(site.siteId);
        await this.restoreDatabase(b, await mysql(), need(work.point?.database, "the point's database"), files);
        await b.restoreContent(need(work.point?.content, "the point's content"), files);
        await this.host.start(hosted(site, await extras()));
        return null;
      }
      default:
        throw new StepFailure('unknown_step', `the node agent has no data step ${step}`);
    }
  }

  private files(site: AgentSite): SiteFiles {
    return { dir: this.host.siteDir(site.siteId), layout: this.host.layout(site.siteId, site.runtime.name) };
  }

  /** The release's directory (its `sqlite3` module opens the site's SQLite file). */
  private async runtimeDir(site: AgentSite): Promise<string> {
    return (await this.host.pullRuntime(hosted(site).runtime)).dir;
  }

  private markRestoring(siteId: string): void {
    if (this.host.isHosted(siteId)) this.host.markRestoring(siteId);
  }

  /** The point's database into the site's own: its MySQL database, or its SQLite file. */
  private async restoreDatabase(
    b: SiteBackups,
    mysql: MysqlSiteDatabase | undefined,
    part: SealedPart,
    files: SiteFiles,
  ): Promise<void> {
    if (mysql) await b.restoreMysql(part, mysql, files);
    else await b.restoreDatabase(part, files);
  }

  /**
   * A staging copy's own access: its driver re-keys the platform's integration in the copied
   * database; answers the new access (the platform seals it for the copy, as `configure_site`'s).
   */
  private async rekey(
    site: AgentSite,
    mysql: MysqlSiteDatabase | undefined,
    files: SiteFiles,
    integrationId: string,
  ): Promise<Record<string, unknown>> {
    const driver = this.host.drivers.get(site.runtime.name);
    const rekey = driver.rekey;
    if (!rekey) throw new StepFailure('site_setup_failed', `runtime ${site.runtime.name} cannot give a copy its own access`);
    try {
      const access = mysql
        ? await withSiteDatabase(mysql, (db) => rekey(db, { integrationId }))
        : await withDatabase(await this.runtimeDir(site), this.sqliteFile(site, files), (db) => rekey(db, { integrationId }));
      return { integration_id: integrationId, ...access };
    } catch (e) {
      if (e instanceof StepFailure) throw e;
      throw new StepFailure('site_setup_failed', (e as Error).message);
    }
  }

  private sqliteFile(site: AgentSite, files: SiteFiles): string {
    if (!files.layout.database)
      throw new StepFailure('site_setup_failed', `the runtime of site ${site.siteId} keeps no database file`);
    return files.layout.database;
  }
}

/** A captured part as the task's result: its content address and size. */
const sealed = (p: SealedPart) => ({ sha256: p.sha256, size_bytes: p.sizeBytes });

function need<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new StepFailure('recovery_point_incomplete', `the task names no ${what}`);
  return value;
}
