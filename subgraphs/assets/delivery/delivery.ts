import { createHmac, timingSafeEqual } from 'node:crypto';
import type { BlobStore } from '../../../core/blobs/blob-store';
import type { Config } from '../../../core/config';
import { newId } from '../../../core/ids';
import type { AssetDoc, AssetModels, AssetVersion, GrantDoc } from '../records';

/**
 * Public delivery remembers a resolved asset for 1 s (a CDN edge caches far longer): the hot path
 * then costs no database round trip. Changes made in this process forget the entry at once; another
 * process's change is seen within the second.
 */
export const DELIVERY_CACHE_MS = 1000;
const DELIVERY_CACHE_MAX = 10_000;

export interface Deliverable {
  asset: AssetDoc;
  version: AssetVersion;
  region: string;
}

/**
 * Delivery decisions: where a version's bytes are, which public asset may be served (cached ~1 s),
 * and the signed grants of private versions (an HMAC token, downloads counted by one conditional `$inc`).
 */
export class AssetDelivery {
  private readonly deliveryCache = new Map<string, { found: Deliverable | null; until: number }>();

  constructor(
    private readonly m: AssetModels,
    private readonly blobs: BlobStore,
    /** The platform's configuration (its addresses are read at call time: tests pick free ports). */
    private readonly cfg: Config,
  ) {}

  private grantMac(grantId: string): string {
    return createHmac('sha256', this.cfg.INTERNAL_SIGNING_KEY).update(`assets-grant:${grantId}`).digest('base64url');
  }

  /** A grant of one download address of the asset's current version (counted when `maxDownloads` is set). */
  async grantUrl(
    accountId: string,
    asset: AssetDoc,
    expiresIn: number,
    maxDownloads: number | null,
  ): Promise<{ url: string; expiresAt: Date; maxDownloads: number | null }> {
    const now = new Date();
    const grant: GrantDoc = {
      _id: newId(),
      accountId,
      assetId: asset._id,
      version: asset.currentVersion,
      expiresAt: new Date(now.getTime() + expiresIn * 1000),
      maxDownloads,
      downloads: 0,
      createdAt: now,
    };
    await this.m.Grant.create(grant);
    const token = `${grant._id}.${this.grantMac(grant._id)}`;
    const name = encodeURIComponent(asset.originalName);
    const url = `${this.cfg.cdnUrl}/private/assets/${asset._id}/versions/${grant.version}/${name}?token=${encodeURIComponent(token)}`;
    return { url, expiresAt: grant.expiresAt, maxDownloads: grant.maxDownloads };
  }

  /** Where a deliverable version's bytes are: the home copy, else a replica that has them. */
  async locate(asset: AssetDoc, sha256: string): Promise<string | null> {
    for (const r of [asset.homeRegion, ...asset.replicatedRegions]) {
      if ((await this.blobs.stat(r, sha256)) !== null) return r;
    }
    return null;
  }

  /** Drops a cached delivery decision (after any change to the asset in this process). */
  forget(assetId: string): void {
    this.deliveryCache.delete(assetId);
  }

  private async resolvePublic(assetId: string): Promise<Deliverable | null> {
    const asset = await this.m.Asset.findOne({ _id: assetId }, { outbox: 0 }).lean<AssetDoc>().exec();
    if (!asset || asset.visibility !== 'public' || asset.status !== 'ready') return null;
    const version = asset.versions.find((v) => v.number === asset.currentVersion);
    if (!version) return null;
    const region = await this.locate(asset, version.sha256);
    return region ? { asset, version, region } : null;
  }

  /** A public asset's current version (the cached delivery decision), or null. */
  async publicCurrent(assetId: string): Promise<Deliverable | null> {
    const now = Date.now();
    let entry = this.deliveryCache.get(assetId);
    if (!entry || entry.until <= now) {
      entry = { found: await this.resolvePublic(assetId), until: now + DELIVERY_CACHE_MS };
      if (this.deliveryCache.size >= DELIVERY_CACHE_MAX) this.deliveryCache.clear();
      this.deliveryCache.set(assetId, entry);
    }
    return entry.found;
  }

  /** An asset record by id (any account): only for addresses already authorised by a signature. */
  async anyAsset(assetId: string): Promise<AssetDoc | null> {
    return this.m.Asset.findOne({ _id: assetId }, { outbox: 0 }).lean<AssetDoc>().exec();
  }

  /** A public asset's current version, or null (404) when it is not deliverable. */
  async publicDelivery(assetId: string, versionId: string): Promise<Deliverable | null> {
    const found = await this.publicCurrent(assetId);
    return found && String(found.asset.currentVersion) === versionId ? found : null;
  }

  /**
   * A signed private version: the token must be this asset's and version's, unexpired, and, with
   * `max_downloads`, not used up — counted by one conditional `$inc`, so concurrent downloads
   * cannot exceed it.
   */
  async signedDelivery(
    assetId: string,
    versionId: string,
    token: string | undefined,
  ): Promise<{ asset: AssetDoc; version: AssetVersion; region: string } | null> {
    if (!token) return null;
    const [grantId, mac] = token.split('.');
    if (!grantId || !mac) return null;
    const expected = Buffer.from(this.grantMac(grantId));
    if (mac.length !== expected.length || !timingSafeEqual(Buffer.from(mac), expected)) return null;
    const grant = await this.m.Grant.findById(grantId).lean<GrantDoc>().exec();
    if (!grant || grant.assetId !== assetId || String(grant.version) !== versionId) return null;
    const asset = await this.m.Asset.findOne({ _id: assetId, accountId: grant.accountId }, { outbox: 0 }).lean<AssetDoc>().exec();
    if (!asset || asset.status !== 'ready') return null;
    const version = asset.versions.find((v) => v.number === grant.version);
    if (!version) return null;
    const region = await this.locate(asset, version.sha256);
    if (!region) return null;
    const now = new Date();
    const filter: Record<string, unknown> = { _id: grantId, expiresAt: { $gt: now } };
    if (grant.maxDownloads !== null) filter.downloads = { $lt: grant.maxDownloads };
    const res = await this.m.Grant.updateOne(filter, { $inc: { downloads: 1 } });
    if (res.modifiedCount !== 1) return null;
    return { asset, version, region };
  }
}
