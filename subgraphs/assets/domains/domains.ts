import { randomBytes } from 'node:crypto';
import type { Model } from 'mongoose';
import { ownershipRecord } from '../../../core/dns/ownership';
import type { DnsResolver } from '../../../core/dns/resolver';
import { normalizeDomain } from '../../../core/domain-names';
import { PlatformError, notFound } from '../../../core/errors';
import { newId } from '../../../core/ids';
import { isDuplicateKey } from '../../../core/mongo';
import type { Principal } from '../../../core/principal';
import type { DomainDoc } from './model';
import { type AssetDoc, SCOPES } from '../records';
import type { AssetsService } from '../storage';

/** The CDN remembers which bucket a `Host` serves for 1 s (negative answers too). */
export const HOST_CACHE_MS = 1000;
const HOST_CACHE_MAX = 10_000;

/** The owner proves a domain with the kernel's ownership record (`core/dns/ownership.ts`). */
export const txtNameOf = (hostname: string) => ownershipRecord(hostname, '').name;
export const txtValueOf = (d: Pick<DomainDoc, 'hostname' | 'token'>) => ownershipRecord(d.hostname, d.token).value;

const domainNotFound = () => notFound('assets.domain_not_found', 'domain not found');

/**
 * Custom domains (spec 4.3): an account claims a host name for one of its buckets, proves it with a
 * DNS TXT token read through the kernel's resolver, and from then on the CDN listener serves the
 * bucket's public assets for requests whose `Host` is that name.
 */
export class Domains {
  private readonly hostCache = new Map<string, { found: DomainDoc | null; until: number }>();

  constructor(
    private readonly model: Model<DomainDoc>,
    private readonly assets: AssetsService,
    private readonly resolver: () => DnsResolver,
  ) {}

  async create(p: Principal | null, input: { domain: string; bucket?: string | null }): Promise<DomainDoc> {
    const { accountId } = this.assets.writer(p, SCOPES.admin);
    const hostname = normalizeDomain(input.domain);
    const bucket = input.bucket
      ? await this.assets.buckets.get(accountId, input.bucket)
      : await this.assets.buckets.ensureDefault(accountId);
    const now = new Date();
    const doc: DomainDoc = {
      _id: newId(),
      accountId,
      bucketId: bucket._id,
      hostname,
      status: 'pending',
      token: randomBytes(18).toString('base64url'),
      verifiedAt: null,
      lastCheckedAt: null,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await this.model.create(doc);
    } catch (e) {
      if (isDuplicateKey(e))
        throw new PlatformError('assets.domain_exists', 409, `${hostname} is already added`, { domain: hostname });
      throw e;
    }
    return doc;
  }

  async list(p: Principal | null): Promise<DomainDoc[]> {
    const { accountId } = this.assets.reader(p);
    return this.model.find({ accountId }).sort({ createdAt: 1, _id: 1 }).lean<DomainDoc[]>().exec();
  }

  private async own(accountId: string, id: string): Promise<DomainDoc> {
    const d = await this.model.findOne({ _id: id, accountId }).lean<DomainDoc>().exec();
    if (!d) throw domainNotFound();
    return d;
  }

  /**
   * Looks the TXT record up now. Found → `verified` (one conditional write; a host another account
   * verified first is a 409). Absent or different → 422 with what to publish. A resolver failure
   * is never taken as an absence: 503, try again.
   */
  async verify(p: Principal | null, id: string): Promise<DomainDoc> {
    const { accountId } = this.assets.writer(p, SCOPES.admin);
    const d = await this.own(accountId, id);
    if (d.status === 'verified') return d;
    const name = txtNameOf(d.hostname);
    const expected = txtValueOf(d);
    const answer = await this.resolver().txt(name);
    const now = new Date();
    await this.model.updateOne({ _id: id }, { $set: { lastCheckedAt: now } });
    if (answer.outcome === 'error') {
      throw new PlatformError(
        'assets.dns_unavailable',
        503,
        `the DNS lookup of ${name} failed (${answer.error}); try again`,
        {
          name,
          failure: answer.error,
        },
        true,
      );
    }
    if (!answer.records.some((r) => r.trim() === expected)) {
      throw new PlatformError('assets.domain_verification_failed', 422, `no TXT record ${name} with the expected value`, {
        record_type: 'TXT',
        name,
        expected_value: expected,
        found: answer.records.slice(0, 10),
      });
    }
    let updated: DomainDoc | null;
    try {
      updated = await this.model
        .findOneAndUpdate(
          { _id: id, accountId, status: 'pending' },
          { $set: { status: 'verified', verifiedHost: d.hostname, verifiedAt: now, updatedAt: now } },
          { new: true },
        )
        .lean<DomainDoc>()
        .exec();
    } catch (e) {
      if (isDuplicateKey(e))
        throw new PlatformError('assets.domain_taken', 409, `${d.hostname} is verified by another account`, {
          domain: d.hostname,
        });
      throw e;
    }
    this.hostCache.delete(d.hostname);
    return updated ?? this.own(accountId, id);
  }

  async remove(p: Principal | null, id: string): Promise<DomainDoc> {
    const { accountId } = this.assets.writer(p, SCOPES.admin);
    const d = await this.own(accountId, id);
    const res = await this.model.deleteOne({ _id: id, accountId });
    if (res.deletedCount !== 1) throw domainNotFound();
    this.hostCache.delete(d.hostname);
    return d;
  }

  /** The verified domain a `Host` header names (port dropped), or null; cached briefly. */
  async byHost(hostHeader: string | undefined): Promise<DomainDoc | null> {
    if (!hostHeader) return null;
    const host = hostHeader.toLowerCase().replace(/:\d+$/, '').replace(/\.$/, '');
    const now = Date.now();
    let entry = this.hostCache.get(host);
    if (!entry || entry.until <= now) {
      const found = await this.model.findOne({ verifiedHost: host }).lean<DomainDoc>().exec();
      entry = { found, until: now + HOST_CACHE_MS };
      if (this.hostCache.size >= HOST_CACHE_MAX) this.hostCache.clear();
      this.hostCache.set(host, entry);
    }
    return entry.found;
  }

  /** A public, ready asset of the domain's bucket by key, as the CDN delivers it; else null. */
  async assetAt(d: DomainDoc, key: string): Promise<AssetDoc | null> {
    const asset = await this.assets.m.Asset.findOne({ accountId: d.accountId, bucketId: d.bucketId, key }, { _id: 1 })
      .lean<AssetDoc>()
      .exec();
    return asset ?? null;
  }
}
