import type { Model } from 'mongoose';
import { PlatformError } from '../../core/errors';
import { decryptSecret } from '../../core/secrets';
import type { DataPlanePort } from '../../dataplane/plane';
import type { SiteBackups } from '../../dataplane/site-backup';
import type { MysqlSiteDatabase } from '../../dataplane/site-database';
import type { HostedSite } from '../../dataplane/sites';
import { providerKeyAad } from './mail-settings';
import type { PublisherModels, SiteDoc } from './model';
import { findRuntime, runtimeSpec, stepRelease } from './runtime-catalog';
import { type RealFault, RecoveryData } from './recovery-data';
import { aad, type SiteCredentialsDoc } from './site-credentials';
import type { SiteDatabases } from './site-databases';
import type { Infrastructure, StepExtras, StepOutput } from './simulated-infrastructure';

/**
 * The publishing area's side of real sites (docs/decisions/0120-data-plane.md, 0285): the same
 * `perform` seam as `SimulatedInfrastructure`, for the steps that are the platform's own. Every
 * machine step (install, start, set-up, probe, drain, stop, delete) is a task of the site's node,
 * hosted or connected, that its agent runs with the site's runtime driver (node-tasks.ts,
 * dataplane/agent/). What stays here: the site's MySQL database (`allocate_database`, 0220), the
 * sealed admin access the agent's set-up answered, the mail configuration a site starts with, and
 * the data steps of recovery points, restores, staging copies and rollbacks, which move real bytes
 * through the blob store (./recovery-data.ts, docs/decisions/0150-recovery-point-bytes.md).
 */

/**
 * Steps with nothing to do on this data plane: the content directory (and a SQLite file) come into
 * being at the first start (or from a point), and a release migrates its database when it starts.
 * `allocate_database` creates a MySQL database and user when `PUBLISHER_MYSQL_URL` is set (0220).
 */
const NO_OP_STEPS = new Set(['create_volume', 'migrate_database']);

export interface RealInfrastructureDeps {
  models: PublisherModels;
  credentials: Model<SiteCredentialsDoc>;
  /** The data plane of this process (the `dataPlane` kernel port), read at call time. */
  dataPlane: () => DataPlanePort;
  /** Where recovery points keep their bytes (the kernel's blob store). */
  backups: SiteBackups;
  /** Each site's MySQL database, when `PUBLISHER_MYSQL_URL` gave it one (docs/decisions/0220-mysql-adapter.md). */
  databases?: SiteDatabases;
  /** The platform's SMTP relay (`MAIL_SMTP_URL`, the SMTP sink stand-in by default), read at call time. */
  mailRelayUrl?: () => string | undefined;
}

export class RealInfrastructure implements Infrastructure {
  readonly kind = 'real' as const;
  private readonly data: RecoveryData;
  constructor(private readonly d: RealInfrastructureDeps) {
    this.data = new RecoveryData({ ...d, aad });
  }

  /** Where recovery points keep their bytes. */
  get backups(): SiteBackups {
    return this.d.backups;
  }

  /** Each site's MySQL database, when `PUBLISHER_MYSQL_URL` is in use (tests and the operator). */
  get databases(): SiteDatabases | undefined {
    return this.d.databases;
  }

  /** Test and drill hook: a step of a release fails (a broken release); docs/decisions/0150. */
  injectFault(fault: RealFault): void {
    this.data.injectFault(fault);
  }

  async perform(
    operationType: string,
    step: string,
    _signal?: AbortSignal,
    op?: { _id: string; projectId: string; resourceId?: string; input?: unknown },
    _idempotencyToken?: string,
    extras: StepExtras = {},
  ): Promise<StepOutput | void> {
    if (!op) throw new Error('the real infrastructure needs the operation');
    if (NO_OP_STEPS.has(step)) return;
    const siteId = extras.siteId ?? op.resourceId ?? op.projectId;
    const site = await this.d.models.Site.findById(siteId).lean();
    if (!site) throw new PlatformError('site_not_found', 404, `site ${siteId} not found`);
    const version = await stepRelease(this.d.models, operationType, step, site, op.input);
    await this.data.faultAt(operationType, step, version, siteId);
    if (RecoveryData.handles(step))
      return this.data.perform(operationType, step, site, version, op.input, (v) => this.hosted(site, v));
    // Every machine step is a task of the site's node (node-tasks.ts); what stays here is the
    // platform's own side: the site's MySQL database and the recovery data.
    if (step === 'allocate_database') return void (await this.d.databases?.allocate(siteId));
    throw new PlatformError('unknown_step', 500, `${step} is a machine step: the site's node runs it`);
  }

  /** The platform's side of a machine step the hosted node runs (node-tasks.ts): a fault injected for it. */
  async beforeMachineStep(operationType: string, step: string, site: SiteDoc, version: string): Promise<void> {
    await this.data.faultAt(operationType, step, version, site._id);
  }

  /** What a hosted site's process starts with (its mail configuration and MySQL database), for the hosted node's agent. */
  async siteExtras(siteId: string): Promise<{ config: Record<string, string>; database?: MysqlSiteDatabase } | undefined> {
    const site = await this.d.models.Site.findById(siteId).lean();
    if (!site) return undefined;
    const database = await this.d.databases?.get(siteId);
    return { config: await this.mailConfig(site), ...(database ? { database } : {}) };
  }

  /** The platform's side after a machine step the hosted node ran: a deleted site's MySQL database and user go. */
  async afterMachineStep(step: string, siteId: string): Promise<void> {
    if (step === 'delete_site') await this.d.databases?.drop(siteId);
  }

  /** The operator's access to a site's admin (`platform sites admin-key`); never served by the API. */
  async adminAccess(siteId: string): Promise<{ adminApiUrl: string; adminApiKey: string; ownerEmail: string } | null> {
    const creds = await this.d.credentials.findById(siteId).lean();
    const site = await this.d.models.Site.findById(siteId).lean();
    if (!creds || !site) return null;
    return {
      adminApiUrl: site.siteUrl.replace(/\/?$/, ''),
      adminApiKey: decryptSecret(creds.adminApiKeyCiphertext, aad(siteId, 'admin_api_key')),
      ownerEmail: creds.ownerEmail,
    };
  }

  private runtime(version: string) {
    const runtime = findRuntime(version);
    if (!runtime) throw new PlatformError('release_unknown', 500, `runtime ${version} is not in the catalog`);
    return runtime;
  }

  private async hosted(site: SiteDoc, version: string): Promise<HostedSite> {
    const runtime = this.runtime(version);
    const url = site.siteUrl;
    const hosts = [new URL(url).hostname];
    if (site.domain && site.domainStatus === 'active') hosts.push(site.domain);
    return {
      siteId: site._id,
      runtime: runtimeSpec(runtime),
      url,
      hosts,
      memoryMb: runtime.memoryFloorMb,
      config: await this.mailConfig(site),
      database: (await this.d.databases?.get(site._id)) ?? undefined,
    };
  }

  /**
   * The site's mail as Ghost configuration (docs/decisions/0157-site-mail.md): transactional mail
   * (invitations, password resets) through the platform's SMTP relay from the site's verified sender,
   * and the newsletter-provider mapping as Ghost's bulk-mail (Mailgun) settings. The provider key is
   * decrypted here only to go into the site's process environment; it is never logged or served.
   */
  private async mailConfig(site: SiteDoc): Promise<Record<string, string>> {
    const config: Record<string, string> = {};
    const relay = this.d.mailRelayUrl?.();
    if (relay) {
      const u = new URL(relay);
      const secure = u.protocol === 'smtps:';
      Object.assign(config, {
        mail__transport: 'SMTP',
        mail__options__host: u.hostname.replace(/^\[|\]$/g, ''),
        mail__options__port: u.port || (secure ? '465' : '25'),
        mail__options__secure: String(secure),
      });
      if (u.username) {
        config.mail__options__auth__user = decodeURIComponent(u.username);
        config.mail__options__auth__pass = decodeURIComponent(u.password);
      }
    }
    if (site.mailSenderEmail) config.mail__from = site.mailSenderEmail;
    const provider = await this.d.models.NewsletterProvider.findById(site._id).lean();
    if (provider?.apiKeyCiphertext) {
      Object.assign(config, {
        bulkEmail__mailgun__apiKey: decryptSecret(provider.apiKeyCiphertext, providerKeyAad(site._id)),
        bulkEmail__mailgun__domain: provider.domain,
        bulkEmail__mailgun__baseUrl: mailgunBaseUrl(provider.region),
      });
    }
    return config;
  }
}

/** Mailgun's API base of a region (`eu` has its own; every other region uses the default one). */
export function mailgunBaseUrl(region: string): string {
  return region === 'eu' ? 'https://api.eu.mailgun.net/v3' : 'https://api.mailgun.net/v3';
}
