import { randomBytes } from 'node:crypto';
import { ownershipRecord, provesOwnership } from '../../core/dns/ownership';
import type { DnsResolver } from '../../core/dns/resolver';
import { badRequest, conflict } from '../../core/errors';
import { isDuplicateKey } from '../../core/mongo';
import { isWithin, normalizeDomain } from '../../core/domain-names';
import type { DomainClaimDoc, DomainStatus, PublisherModels, SiteDoc } from './model';

/** A claim whose site no longer shows the domain is taken over after this long: 1 minute. */
const STALE_CLAIM_MS = 60_000;

/**
 * How long an unverified claim holds a name against other accounts (spec: "not shown"; recorded in
 * docs/spec-decisions.md): 7 days, long enough to reach a slow DNS host, short enough that typing a
 * name someone else owns never blocks its owner for good.
 */
export const DEFAULT_CLAIM_TTL_MS = 7 * 24 * 3600_000;

export interface DnsRecordView {
  type: string;
  name: string;
  value: string;
}

export interface DomainView {
  name: string;
  /** `pending_verification` → `active` once the TXT token is seen; `expired` when the claim lapsed first. */
  status: DomainStatus;
  /** The record to create at the customer's DNS host so traffic reaches the site. */
  dnsRecord: DnsRecordView;
  /** The TXT record proving ownership; null once verified. */
  verificationRecord: DnsRecordView | null;
  /** When an unverified claim stops holding the name; null once verified. */
  expiresAt: Date | null;
  updatedAt: Date;
}

export interface DomainClaimOptions {
  /** Where platform addresses live; names under it cannot be claimed. */
  sitesDomain: string;
  /** Reads the ownership TXT record. */
  resolver: DnsResolver;
  claimTtlMs?: number;
  now?: () => number;
  /** Told when the names a site is served at change (a domain verified, or a verified one replaced): the edge follows. */
  onHostsChanged?: (siteId: string) => void;
}

/**
 * Custom domains. A claim document keyed by the domain makes two sites holding the same one
 * impossible without transactions: claim first, then point the site at it, then drop the old claim.
 * Ownership is a DNS TXT token, checked when the same name is posted again and by the sweeper; a
 * claim that is never verified lapses after `claimTtlMs`, and then another account may take it.
 */
export class DomainClaims {
  private readonly ttlMs: number;
  private readonly now: () => number;

  constructor(
    private readonly models: PublisherModels,
    private readonly opts: DomainClaimOptions,
  ) {
    this.ttlMs = opts.claimTtlMs ?? DEFAULT_CLAIM_TTL_MS;
    this.now = opts.now ?? Date.now;
  }

  /**
   * Attaches `input` (normalised) to the site, replacing any other; it waits in
   * `pending_verification`. Posting the name the site already has checks its TXT record now.
   */
  async attach(site: SiteDoc, input: string): Promise<DomainView> {
    const domain = normalizeDomain(input);
    if (isWithin(domain, this.opts.sitesDomain)) {
      throw badRequest('invalid_domain', `addresses under ${this.opts.sitesDomain} are assigned by the platform`, {
        reason: 'reserved',
      });
    }
    if (site.domain === domain) return this.view(await this.verify(site))!;
    const claim = await this.claim(site, domain);
    const now = new Date(this.now());
    const fields = {
      domain,
      domainStatus: 'pending_verification' as const,
      domainToken: claim.token,
      domainExpiresAt: claim.expiresAt,
      domainUpdatedAt: now,
      updatedAt: now,
    };
    const updated = await this.models.Site.findOneAndUpdate({ _id: site._id }, { $set: fields }, { new: true }).lean();
    if (site.domain) await this.models.DomainClaim.deleteOne({ _id: site.domain, projectId: site._id });
    if (site.domain && site.domainStatus === 'active') this.opts.onHostsChanged?.(site._id);
    return this.view(updated ?? { ...site, ...fields })!;
  }

  view(site: SiteDoc): DomainView | null {
    if (!site.domain) return null;
    const active = site.domainStatus === 'active';
    const expiresAt = active ? null : (site.domainExpiresAt ?? null);
    const lapsed = !active && expiresAt !== null && expiresAt.getTime() <= this.now();
    return {
      name: site.domain,
      status: active ? 'active' : lapsed ? 'expired' : 'pending_verification',
      dnsRecord: { type: 'CNAME', name: site.domain, value: `${site.slug}.${this.opts.sitesDomain}` },
      verificationRecord: active || !site.domainToken ? null : ownershipRecord(site.domain, site.domainToken),
      expiresAt,
      updatedAt: site.domainUpdatedAt ?? site.updatedAt,
    };
  }

  /**
   * Looks for the site's TXT token; when present, marks the claim and the site verified. A lookup
   * that fails (SERVFAIL, timeout) leaves the claim as it was: a failure never proves absence, and
   * never proves ownership either. Returns the site as it now stands.
   */
  async verify(site: SiteDoc): Promise<SiteDoc> {
    if (!site.domain || site.domainStatus === 'active' || !site.domainToken) return site;
    const record = ownershipRecord(site.domain, site.domainToken);
    if (!provesOwnership(await this.opts.resolver.txt(record.name), site.domainToken)) return site;
    // Only the claim this token was issued for: a claim another account took over after expiry
    // carries another token, so an old TXT record cannot win the name back.
    const claimed = await this.models.DomainClaim.findOneAndUpdate(
      { _id: site.domain, projectId: site._id, token: site.domainToken },
      { $set: { verifiedAt: new Date(this.now()), expiresAt: null } },
    ).lean();
    if (!claimed) return site;
    const now = new Date(this.now());
    const updated = await this.models.Site.findOneAndUpdate(
      { _id: site._id, domain: site.domain },
      { $set: { domainStatus: 'active', domainExpiresAt: null, domainUpdatedAt: now, updatedAt: now } },
      { new: true },
    ).lean();
    if (updated) this.opts.onHostsChanged?.(site._id);
    return updated ?? site;
  }

  /** Checks every unverified claim that has not lapsed (the sweeper's pass); returns how many became active. */
  async verifyPending(limit = 100): Promise<number> {
    const pending = await this.models.DomainClaim.find({ verifiedAt: null, expiresAt: { $gt: new Date(this.now()) } })
      .limit(limit)
      .lean();
    let verified = 0;
    for (const claim of pending) {
      const site = await this.models.Site.findOne({ _id: claim.projectId }).lean();
      if (site?.domain !== claim._id) continue;
      if ((await this.verify(site)).domainStatus === 'active') verified++;
    }
    return verified;
  }

  /** Takes the domain for the site; 409 `domain_in_use` when another site holds it (never saying which). */
  private async claim(site: SiteDoc, domain: string): Promise<DomainClaimDoc> {
    const fresh: DomainClaimDoc = {
      _id: domain,
      projectId: site._id,
      accountId: site.accountId,
      token: randomBytes(16).toString('hex'),
      createdAt: new Date(this.now()),
      expiresAt: new Date(this.now() + this.ttlMs),
      verifiedAt: null,
    };
    try {
      await this.models.DomainClaim.create(fresh);
      return fresh;
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
    }
    const inUse = () => conflict('domain_in_use', `${domain} is claimed by another site`, { domain });
    const claim = await this.models.DomainClaim.findById(domain).lean();
    if (!claim) return this.claim(site, domain);
    if (claim.projectId === site._id) return claim;
    if (!this.releasable(claim, await this.models.Site.findById(claim.projectId).lean())) throw inUse();
    // Conditional on the token we read: of two takers racing for a lapsed claim, one wins.
    const taken = await this.models.DomainClaim.findOneAndUpdate(
      { _id: domain, projectId: claim.projectId, token: claim.token },
      {
        $set: {
          projectId: fresh.projectId,
          accountId: fresh.accountId,
          token: fresh.token,
          createdAt: fresh.createdAt,
          expiresAt: fresh.expiresAt,
          verifiedAt: null,
        },
      },
    );
    if (!taken) throw inUse();
    // The previous holder loses the name it never proved.
    await this.models.Site.updateOne(
      { _id: claim.projectId, domain },
      {
        $set: {
          domain: null,
          domainStatus: null,
          domainToken: null,
          domainExpiresAt: null,
          domainUpdatedAt: new Date(this.now()),
        },
      },
    );
    return fresh;
  }

  /** A verified claim is never released; an unverified one when it lapsed or its site moved on. */
  private releasable(claim: DomainClaimDoc, holder: SiteDoc | null): boolean {
    if (claim.verifiedAt) return false;
    const now = this.now();
    if (claim.expiresAt && claim.expiresAt.getTime() <= now) return true;
    return holder?.domain !== claim._id && now - new Date(claim.createdAt).getTime() > STALE_CLAIM_MS;
  }
}
