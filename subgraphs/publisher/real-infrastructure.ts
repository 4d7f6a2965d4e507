import type { Model } from 'mongoose';
import { PlatformError } from '../../core/errors';
import { decryptSecret } from '../../core/secrets';
import type { BlobStore } from '../../core/blobs/blob-store';
import type { MysqlSiteDatabase } from '../../dataplane/site-database';
import { providerKeyAad } from './mail-settings';
import type { PublisherModels, SiteDoc } from './model';
import { stepRelease } from './runtime-catalog';
import { RecoveryData } from './recovery-data';
import { aad, type SiteCredentialsDoc } from './site-credentials';
import type { SiteDatabases } from './site-databases';
import type { Infrastructure, StepExtras, StepOutput } from './simulated-infrastructure';

/**
 * The publishing area's side of real sites (docs/decisions/0120-data-plane.md, 0285, 0360): the
 * same `perform` seam as `SimulatedInfrastructure`, for the steps that are the platform's own. Every
 * machine step (install, start, set-up, probe, drain, stop, delete) and every data step (a recovery
 * point's capture, a restore, a staging copy's re-keying, an upgrade's rollback) is a task of the
 * site's node that its agent runs with the site's runtime driver (node-tasks.ts, dataplane/agent/).
 * What stays here: the site's MySQL database (`allocate_database`, 0220), what the data steps ask
 * for and what the platform keeps of their answers (./recovery-data.ts), the sealed admin access
 * the agent's set-up answered, the mail configuration a site starts with, and injected faults.
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

/**
 * Steps with nothing to do on this data plane: the content directory (and a SQLite file) come into
 * being at the first start (or from a point), and a release migrates its database when it starts.
 * `allocate_database` creates a MySQL database and user when `PUBLISHER_MYSQL_URL` is set (0220).
 */
const NO_OP_STEPS = new Set(['create_volume', 'migrate_database']);

export interface RealInfrastructureDeps {
  models: PublisherModels;
  credentials: Model<SiteCredentialsDoc>;
  /** Where recovery points keep their bytes (the kernel's blob store; the hosted node's agent writes and reads them). */
  recoveryStore: BlobStore;
  /** Each site's MySQL database, when `PUBLISHER_MYSQL_URL` gave it one (docs/decisions/0220-mysql-adapter.md). */
  databases?: SiteDatabases;
  /** The platform's SMTP relay (`MAIL_SMTP_URL`, the SMTP sink stand-in by default), read at call time. */
  mailRelayUrl?: () => string | undefined;
}

export class RealInfrastructure implements Infrastructure {
  readonly kind = 'real' as const;
  /** What a hosted site's data steps ask of its node and what the platform keeps of their answers. */
  readonly data: RecoveryData;
  private faults: (RealFault & { times: number })[] = [];
  constructor(private readonly d: RealInfrastructureDeps) {
    this.data = new RecoveryData({ ...d, aad });
  }

  /** Where recovery points keep their bytes (tests read them here). */
  get backups(): { store: BlobStore } {
    return { store: this.d.recoveryStore };
  }

  /** Each site's MySQL database, when `PUBLISHER_MYSQL_URL` is in use (tests and the operator). */
  get databases(): SiteDatabases | undefined {
    return this.d.databases;
  }

  /** Test and drill hook: a step of a release fails (a broken release); docs/decisions/0150. */
  injectFault(fault: RealFault): void {
    this.faults.push({ ...fault, times: fault.times ?? 1 });
  }

  private async faultAt(operationType: string, step: string, version: string, siteId: string): Promise<void> {
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
    await this.faultAt(operationType, step, await stepRelease(this.d.models, operationType, step, site, op.input), siteId);
    // Every machine and data step is a task of the site's node (node-tasks.ts); what stays here is
    // the platform's own side: the site's MySQL database.
    if (step === 'allocate_database') return void (await this.d.databases?.allocate(siteId));
    throw new PlatformError('unknown_step', 500, `${step} is a step of the site's node: its agent runs it`);
  }

  /** The platform's side of a step the hosted node runs (node-tasks.ts): a fault injected for it. */
  async beforeMachineStep(operationType: string, step: string, site: SiteDoc, version: string): Promise<void> {
    await this.faultAt(operationType, step, version, site._id);
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
