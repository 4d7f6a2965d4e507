import { badRequest, conflict } from '../../core/errors';
import { isDuplicateKey } from '../../core/mongo';
import { isWithin, normalizeDomain } from '../../core/domain-names';
import type { DomainStatus, PublisherModels, SiteDoc } from './model';

/** A claim whose site does not show the domain is taken over after this long: 1 minute. */
const STALE_CLAIM_MS = 60_000;

export interface DomainView {
  name: string;
  status: DomainStatus;
  /** The record to create at the customer's DNS host. */
  dnsRecord: { type: string; name: string; value: string };
  updatedAt: Date;
}

/**
 * Custom domains. A claim document keyed by the domain makes two sites holding the same one
 * impossible without transactions: claim first, then point the site at it, then drop the old claim.
 */
export class DomainClaims {
  constructor(
    private readonly models: PublisherModels,
    /** Where platform addresses live; names under it cannot be claimed. */
    private readonly sitesDomain: string,
  ) {}

  /** Attaches `input` (normalised) to the site, replacing any other; it waits in `pending_verification`. */
  async attach(site: SiteDoc, input: string): Promise<DomainView> {
    const domain = normalizeDomain(input);
    if (isWithin(domain, this.sitesDomain)) {
      throw badRequest('invalid_domain', `addresses under ${this.sitesDomain} are assigned by the platform`, {
        reason: 'reserved',
      });
    }
    if (site.domain === domain) return this.view(site)!;
    await this.claim(site, domain);
    const now = new Date();
    const updated = await this.models.Site.findOneAndUpdate(
      { _id: site._id },
      { $set: { domain, domainStatus: 'pending_verification', domainUpdatedAt: now, updatedAt: now } },
      { new: true },
    ).lean();
    if (site.domain) await this.models.DomainClaim.deleteOne({ _id: site.domain, projectId: site._id });
    return this.view(updated ?? { ...site, domain, domainStatus: 'pending_verification', domainUpdatedAt: now })!;
  }

  view(site: SiteDoc): DomainView | null {
    if (!site.domain) return null;
    return {
      name: site.domain,
      status: site.domainStatus ?? 'pending_verification',
      dnsRecord: { type: 'CNAME', name: site.domain, value: `${site.slug}.${this.sitesDomain}` },
      updatedAt: site.domainUpdatedAt ?? site.updatedAt,
    };
  }

  /** Takes the domain for the site; 409 `domain_in_use` when another site holds it. */
  private async claim(site: SiteDoc, domain: string): Promise<void> {
    try {
      await this.models.DomainClaim.create({
        _id: domain,
        projectId: site._id,
        accountId: site.accountId,
        createdAt: new Date(),
      });
      return;
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
    }
    const inUse = () => conflict('domain_in_use', `${domain} is attached to another site`, { domain });
    const claim = await this.models.DomainClaim.findById(domain).lean();
    if (!claim) return this.claim(site, domain);
    if (claim.projectId === site._id) return;
    const holder = await this.models.Site.findById(claim.projectId).lean();
    // A claim left behind by a site that moved to another domain (or by a write that never finished).
    const stale = holder?.domain !== domain && Date.now() - new Date(claim.createdAt).getTime() > STALE_CLAIM_MS;
    if (!stale) throw inUse();
    const taken = await this.models.DomainClaim.findOneAndUpdate(
      { _id: domain, projectId: claim.projectId },
      { $set: { projectId: site._id, accountId: site.accountId, createdAt: new Date() } },
    );
    if (!taken) throw inUse();
  }
}
