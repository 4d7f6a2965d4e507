import type { Config } from '../../../core/config';
import { findPage } from '../../../core/keyset';
import { PlatformError, badRequest, notFound } from '../../../core/errors';
import { isDuplicateKey } from '../../../core/mongo';
import { type Principal, requireScope, requireWriter } from '../../../core/principal';
import type { BlobStore } from '../../../core/blobs/blob-store';
import type { AssetsSettings } from '../settings';
import { DeleteJobs } from './delete-jobs';
import {
  checkCacheControl,
  checkKey,
  checkMetadataSize,
  checkOriginalName,
  checkVisibility,
  objectEventEntry,
  type AssetDoc,
  type AssetModels,
  type AssetVersion,
  type JobDoc,
  SCOPES,
} from '../records';
import { type BucketInput, Buckets } from '../buckets';
import { type ContentPolicy, DEFAULT_POLICY, policyOf, type Scanner } from '../scanning';
import { requiredRevision, revisionStale } from '../revisions';
import { UploadCapabilities, UploadSessions, Uploads, type AssetAccess } from '../uploads';
import { type DerivativeDoc, Transforms } from '../transforms';
import { AssetDelivery, Replication } from '../delivery';

/** Spec 4.3 sort keys and their stored fields. */
export const SORT_FIELDS = {
  created_at: 'createdAt',
  updated_at: 'updatedAt',
  size: 'size',
  key: 'key',
  original_name: 'originalName',
  mime_type: 'mimeType',
} as const;
export type SortKey = keyof typeof SORT_FIELDS;
export const LIST_LIMIT_DEFAULT = 50;
export const LIST_LIMIT_MAX = 200;

/** The list's filters; a field left out, empty or `null` (a GraphQL caller may send it so) filters nothing. */
export interface ListFilter {
  bucket?: string | null;
  prefix?: string | null;
  visibility?: string | null;
  query?: string | null;
  tag?: string | null;
  mimeType?: string | null;
  type?: string | null;
  folder?: string | null;
  checksum?: string | null;
  status?: string | null;
  scanStatus?: string | null;
  replicationStatus?: string | null;
  moderationStatus?: string | null;
  quarantineStatus?: string | null;
}

export interface ListArgs {
  filter: ListFilter;
  sort?: SortKey;
  direction?: 'asc' | 'desc';
  cursor?: string;
  limit?: number;
}

export interface AssetPatch {
  bucket?: string;
  key?: string;
  originalName?: string;
  cacheControl?: string;
  visibility?: 'public' | 'private';
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const assetNotFound = () => notFound('assets.not_found', 'asset not found');
export const BRANCH_RE = /^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$/;

/** What the composition gives the service besides its stores: answers from other areas and other modules. */
export interface AssetsHooks {
  /** Whether a key is live (the kernel's key-status port); default: always. */
  keyLive?: (accountId: string, keyId: string) => Promise<boolean>;
  /** May add to each revision-guarded update before it is written (the webhooks' outbox entry). */
  prepareGuardedUpdate?: (
    ref: { accountId: string; id: string; revision: number },
    update: Record<string, unknown>,
  ) => Record<string, unknown>;
  /** Told of each derivative computed (the usage counters, views/usage.ts). */
  onTransformComputed?: (d: DerivativeDoc) => void;
}

/** The rules of the assets area: every method takes the caller and answers only within its account. */
export class AssetsService implements AssetAccess {
  readonly buckets: Buckets;
  readonly uploads: Uploads;
  readonly sessions: UploadSessions;
  readonly capabilities: UploadCapabilities;
  readonly transforms: Transforms;
  private readonly delivery: AssetDelivery;
  private readonly deleteJobs: DeleteJobs;
  private readonly replication: Replication;
  /**
   * Whether the key a derived write credential was made from (an upload capability, a session's
   * signed URL) is still live (decision 0099). The module wires it to the kernel's key-status port.
   */
  readonly keyLive: (accountId: string, keyId: string) => Promise<boolean>;
  /** May add to each revision-guarded update before it is written (the webhooks' outbox entry). */
  readonly prepareGuardedUpdate: NonNullable<AssetsHooks['prepareGuardedUpdate']>;

  constructor(
    readonly m: AssetModels,
    readonly blobs: BlobStore,
    readonly scanner: Scanner,
    readonly settings: AssetsSettings,
    /** The platform's configuration (its addresses are read at call time: tests pick free ports). */
    readonly cfg: Config,
    private readonly objectsTopic: () => string,
    /** Tells the outbox relay there is something to publish. */
    private readonly nudgeRelay: () => void = () => undefined,
    hooks: AssetsHooks = {},
  ) {
    this.keyLive = hooks.keyLive ?? (async () => true);
    this.prepareGuardedUpdate = hooks.prepareGuardedUpdate ?? ((_ref, update) => update);
    this.buckets = new Buckets(m, settings.ASSETS_REGIONS);
    this.uploads = new Uploads(m, blobs, this.buckets, scanner, settings, objectsTopic, async (a) => {
      await this.transforms.enqueueEager(a);
      this.nudge();
    });
    this.sessions = new UploadSessions(this);
    this.capabilities = new UploadCapabilities(this);
    this.transforms = new Transforms(this, hooks.onTransformComputed);
    this.delivery = new AssetDelivery(m, blobs, cfg);
    this.replication = new Replication({ m, blobs, forget: (id) => this.forget(id) });
    this.deleteJobs = new DeleteJobs({
      m,
      settings,
      uploads: this.uploads,
      objectsTopic,
      nudge: () => this.nudge(),
      forget: (id) => this.forget(id),
      reader: (p) => this.reader(p),
      writer: (p) => this.writer(p),
      get: (p, id) => this.get(p, id),
      guardedUpdate: (accountId, id, revision, requested) => this.guardedUpdate(accountId, id, revision, requested),
    });
  }

  /** Who else wants to hear of new work (the assets worker, where workers run). */
  private readonly nudged = new Set<() => void>();

  /** Something was written: the relay has events to publish, the worker may have work. */
  nudge(): void {
    this.nudgeRelay();
    for (const fn of this.nudged) fn();
  }

  /** `fn` runs on every `nudge` until the returned function is called. */
  onNudge(fn: () => void): () => void {
    this.nudged.add(fn);
    return () => this.nudged.delete(fn);
  }

  reader(p: Principal | null | undefined): Principal {
    return requireScope(p, SCOPES.read);
  }

  writer(p: Principal | null | undefined, scope: string = SCOPES.write): Principal {
    return requireWriter(requireScope(p, scope));
  }

  // ---- buckets and policy -------------------------------------------------------------------

  listBuckets(p: Principal | null) {
    return this.buckets.list(this.reader(p).accountId);
  }
  createBucket(p: Principal | null, input: BucketInput) {
    return this.buckets.create(this.writer(p, SCOPES.admin).accountId, input);
  }
  updateBucket(p: Principal | null, id: string, ifMatch: string | null | undefined, input: BucketInput) {
    return this.buckets.update(this.writer(p, SCOPES.admin).accountId, id, ifMatch, input);
  }
  deleteBucket(p: Principal | null, id: string, ifMatch: string | null | undefined) {
    return this.buckets.remove(this.writer(p, SCOPES.admin).accountId, id, ifMatch);
  }

  async getPolicy(p: Principal | null): Promise<ContentPolicy> {
    return this.uploads.policy(this.reader(p).accountId);
  }

  /** Replaces the content policy; fields left out return to their defaults. */
  async putPolicy(p: Principal | null, input: Partial<ContentPolicy>): Promise<ContentPolicy> {
    const caller = this.writer(p, SCOPES.admin);
    const { accountId } = caller;
    const next: ContentPolicy = {
      ...DEFAULT_POLICY,
      ...Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)),
    };
    // A limit set is bounded by the plan: no policy promises a file larger than the whole quota
    // (defaults are bounded where they are used: Uploads.largestFile).
    const quota = this.uploads.quotaOf(caller.plan);
    const over = (['maxImageBytes', 'maxVideoBytes', 'maxOtherBytes'] as const).filter(
      (k) => input[k] !== undefined && input[k]! > quota,
    );
    if (over.length > 0) {
      const snake = (k: string) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
      throw badRequest('validation_failed', `${over.map(snake).join(', ')}: at most the plan's quota of ${quota} bytes`, {
        fields: over.map((k) => ({ field: snake(k), problem: `must be at most ${quota} bytes (the plan's quota)` })),
        limit: quota,
      });
    }
    const doc = await this.m.AccountState.findOneAndUpdate(
      { _id: accountId },
      { $set: { ...next, updatedAt: new Date() }, $inc: { policyRevision: 1 } },
      { upsert: true, new: true },
    )
      .lean()
      .exec();
    return policyOf(doc);
  }

  // ---- reading ------------------------------------------------------------------------------

  async get(p: Principal | null, id: string): Promise<AssetDoc> {
    const { accountId } = this.reader(p);
    const doc = await this.m.Asset.findOne({ _id: id, accountId }, { outbox: 0 }).lean<AssetDoc>().exec();
    if (!doc) throw assetNotFound();
    return doc;
  }

  async list(p: Principal | null, args: ListArgs): Promise<{ assets: AssetDoc[]; total: number; nextCursor: string }> {
    const { accountId } = this.reader(p);
    const sort: SortKey = args.sort ?? 'created_at';
    if (!(sort in SORT_FIELDS))
      throw badRequest('validation_failed', `sort must be one of ${Object.keys(SORT_FIELDS).join(', ')}`);
    const direction = args.direction ?? 'desc';
    const field = SORT_FIELDS[sort];
    const limit = Math.min(Math.max(args.limit ?? LIST_LIMIT_DEFAULT, 1), LIST_LIMIT_MAX);
    const f = args.filter;
    const filter: Record<string, unknown> = { accountId };
    const exact: [keyof ListFilter, string][] = [
      ['bucket', 'bucketId'],
      ['visibility', 'visibility'],
      ['mimeType', 'mimeType'],
      ['type', 'type'],
      ['checksum', 'checksum'],
      ['status', 'status'],
      ['scanStatus', 'scanStatus'],
      ['replicationStatus', 'replicationStatus'],
      ['moderationStatus', 'moderationStatus'],
      ['quarantineStatus', 'quarantineStatus'],
    ];
    for (const [k, path] of exact) if (f[k]) filter[path] = f[k];
    if (f.folder) filter.folder = f.folder.replace(/^\/+|\/+$/g, '');
    if (f.tag) filter.tags = f.tag;
    if (f.prefix) filter.key = { $regex: `^${escapeRe(f.prefix)}` };
    if (f.query) {
      const re = { $regex: escapeRe(f.query), $options: 'i' };
      filter.$or = [{ key: re }, { originalName: re }];
    }
    const total = await this.m.Asset.countDocuments(filter);
    // The cursor is bound to the sort, the direction and the filter: reused elsewhere it is refused.
    const binding = `${sort}:${direction}:${JSON.stringify(f)}`;
    const page = await findPage<AssetDoc>(this.m.Asset, filter, {
      field,
      binding,
      order: direction === 'asc' ? 1 : -1,
      // A date sorts by its ISO time; a name or a size by its value as it is.
      position: { value: 'v', id: 'id', form: field === 'createdAt' || field === 'updatedAt' ? 'iso' : 'raw' },
      limit,
      cursor: args.cursor,
      projection: { outbox: 0 },
    });
    return { assets: page.items, total, nextCursor: page.nextCursor ?? '' };
  }

  // ---- changing one asset -------------------------------------------------------------------

  private async guardedUpdate(
    accountId: string,
    id: string,
    revision: number,
    requested: Record<string, unknown>,
  ): Promise<AssetDoc> {
    const update = this.prepareGuardedUpdate({ accountId, id, revision }, requested);
    let updated: AssetDoc | null;
    try {
      updated = await this.m.Asset.findOneAndUpdate({ _id: id, accountId, revision, status: { $ne: 'deleting' } }, update, {
        new: true,
        projection: { outbox: 0 },
      })
        .lean<AssetDoc>()
        .exec();
    } catch (e) {
      if (isDuplicateKey(e)) throw new PlatformError('assets.duplicate_key', 409, 'that key already exists in the bucket');
      throw e;
    }
    if (updated) {
      this.forget(id);
      this.nudge();
      return updated;
    }
    const now = await this.m.Asset.findOne({ _id: id, accountId }, { revision: 1, status: 1 }).lean<AssetDoc>().exec();
    if (!now || now.status === 'deleting') throw assetNotFound();
    throw revisionStale(now.revision);
  }

  /** PATCH: bucket, key, original name, cache control, visibility; `If-Match` required. */
  async patch(p: Principal | null, id: string, ifMatch: string | null | undefined, patch: AssetPatch): Promise<AssetDoc> {
    const { accountId } = this.writer(p);
    // Every transport's patch passes here: the stored fields' rules are checked once (decision 0096).
    if (patch.key !== undefined) checkKey(patch.key);
    if (patch.visibility !== undefined) checkVisibility(patch.visibility);
    if (patch.cacheControl !== undefined) checkCacheControl(patch.cacheControl);
    if (patch.originalName !== undefined) checkOriginalName(patch.originalName);
    const revision = requiredRevision(ifMatch);
    const current = await this.get(p, id);
    const set: Record<string, unknown> = { updatedAt: new Date() };
    if (patch.bucket !== undefined) set.bucketId = (await this.buckets.get(accountId, patch.bucket))._id;
    if (patch.key !== undefined) set.key = patch.key;
    if (patch.originalName !== undefined) set.originalName = patch.originalName;
    if (patch.cacheControl !== undefined) set.cacheControl = patch.cacheControl;
    if (patch.visibility !== undefined) set.visibility = patch.visibility;
    const update: Record<string, unknown> = { $set: set, $inc: { revision: 1 } };
    const moved = (set.bucketId ?? current.bucketId) !== current.bucketId || (set.key ?? current.key) !== current.key;
    if (moved) {
      // A move is the old object gone and a new one there, for object-store subscribers.
      const v = current.versions.find((x) => x.number === current.currentVersion);
      const base = { version: current.currentVersion, size: current.size, contentType: current.mimeType };
      const moved2 = {
        ...current,
        bucketId: (set.bucketId as string) ?? current.bucketId,
        key: (set.key as string) ?? current.key,
      };
      update.$push = {
        outbox: {
          $each: [
            objectEventEntry(this.objectsTopic(), { type: 'object.deleted', asset: current, ...base, sha256: null }),
            objectEventEntry(this.objectsTopic(), {
              type: 'object.created',
              asset: moved2,
              ...base,
              sha256: v?.sha256 ?? current.checksum,
            }),
          ],
        },
      };
    }
    return this.guardedUpdate(accountId, id, revision, update);
  }

  /** Replaces the tag set (`If-Match` honoured when sent). */
  async setTags(p: Principal | null, id: string, ifMatch: string | null | undefined, tags: string[]): Promise<AssetDoc> {
    const { accountId } = this.writer(p);
    const current = await this.get(p, id);
    const revision = ifMatch ? requiredRevision(ifMatch) : current.revision;
    const clean = [...new Set(tags.map((t) => t.trim()).filter(Boolean))];
    return this.guardedUpdate(accountId, id, revision, { $set: { tags: clean, updatedAt: new Date() }, $inc: { revision: 1 } });
  }

  /** Merges keys into the metadata; a key set to null is removed (JSON merge patch, one level). */
  async mergeMetadata(
    p: Principal | null,
    id: string,
    ifMatch: string | null | undefined,
    patch: Record<string, unknown>,
  ): Promise<AssetDoc> {
    const { accountId } = this.writer(p);
    const current = await this.get(p, id);
    const revision = ifMatch ? requiredRevision(ifMatch) : current.revision;
    const metadata: Record<string, unknown> = { ...(current.metadata ?? {}) };
    for (const [k, v] of Object.entries(patch)) {
      if (v === null) delete metadata[k];
      else metadata[k] = v;
    }
    // The merged record is held to the upload path's 16 KiB, so merges cannot grow it without end.
    checkMetadataSize(metadata);
    return this.guardedUpdate(accountId, id, revision, { $set: { metadata, updatedAt: new Date() }, $inc: { revision: 1 } });
  }

  // ---- versions and branches ----------------------------------------------------------------

  async versions(p: Principal | null, id: string): Promise<{ asset: AssetDoc; versions: AssetVersion[] }> {
    const asset = await this.get(p, id);
    if (asset.status === 'deleting') throw assetNotFound();
    return { asset, versions: [...asset.versions].sort((a, b) => b.number - a.number) };
  }

  /** Makes a copy of version `n` the new current version (history stays linear and complete). */
  private async promoteVersion(
    p: Principal | null,
    id: string,
    ifMatch: string | null | undefined,
    n: number,
  ): Promise<AssetDoc> {
    const { accountId } = this.writer(p);
    const current = await this.get(p, id);
    const revision = ifMatch ? requiredRevision(ifMatch) : current.revision;
    const from = current.versions.find((v) => v.number === n);
    if (!from) throw notFound('assets.version_not_found', 'version not found');
    const number = Math.max(...current.versions.map((v) => v.number)) + 1;
    const now = new Date();
    const version: AssetVersion = { ...from, number, branch: 'main', createdAt: now };
    const event = objectEventEntry(this.objectsTopic(), {
      type: 'object.overwritten',
      asset: current,
      version: number,
      size: from.size,
      contentType: from.mimeType,
      sha256: from.sha256,
    });
    await this.uploads.reserve(this.writer(p), from.size);
    try {
      return await this.guardedUpdate(accountId, id, revision, {
        $push: { versions: version, outbox: event },
        $inc: { revision: 1 },
        $set: {
          currentVersion: number,
          size: from.size,
          checksum: from.sha256,
          mimeType: from.mimeType,
          originalName: from.originalName,
          updatedAt: now,
        },
      });
    } catch (e) {
      await this.uploads.release(accountId, from.size);
      throw e;
    }
  }

  restoreVersion(p: Principal | null, id: string, versionId: string, ifMatch?: string | null): Promise<AssetDoc> {
    const n = Number(versionId);
    if (!Number.isInteger(n) || n < 1) throw notFound('assets.version_not_found', 'version not found');
    return this.promoteVersion(p, id, ifMatch, n);
  }

  async createBranch(p: Principal | null, id: string, name: string, fromVersion?: number | null): Promise<AssetDoc> {
    const { accountId } = this.writer(p);
    if (!BRANCH_RE.test(name)) throw badRequest('validation_failed', 'branch name must be 1–64 letters, digits, . _ -');
    // `main` always exists (the current version): asking for it again is the same conflict as any
    // existing branch name, not a malformed request.
    if (name === 'main') throw new PlatformError('assets.branch_exists', 409, 'branch main exists');
    const current = await this.get(p, id);
    const version = fromVersion ?? current.currentVersion;
    if (!current.versions.some((v) => v.number === version)) throw notFound('assets.version_not_found', 'version not found');
    if (current.branches.some((b) => b.name === name))
      throw new PlatformError('assets.branch_exists', 409, `branch ${name} exists`);
    const branches = [...current.branches, { name, version, createdAt: new Date() }];
    return this.guardedUpdate(accountId, id, current.revision, {
      $set: { branches, updatedAt: new Date() },
      $inc: { revision: 1 },
    });
  }

  async promoteBranch(p: Principal | null, id: string, name: string, ifMatch?: string | null): Promise<AssetDoc> {
    const current = await this.get(p, id);
    const branch = current.branches.find((b) => b.name === name);
    if (!branch) throw notFound('assets.branch_not_found', 'branch not found');
    return this.promoteVersion(p, id, ifMatch, branch.version);
  }

  // ---- delete jobs (delete-jobs.ts) ---------------------------------------------------------

  requestDelete(p: Principal | null, id: string, ifMatch: string | null | undefined): Promise<JobDoc> {
    return this.deleteJobs.requestDelete(p, id, ifMatch);
  }
  getJob(p: Principal | null, jobId: string): Promise<JobDoc> {
    return this.deleteJobs.getJob(p, jobId);
  }
  cancelJob(p: Principal | null, jobId: string): Promise<JobDoc> {
    return this.deleteJobs.cancelJob(p, jobId);
  }
  runDeleteJob(job: JobDoc): Promise<void> {
    return this.deleteJobs.runDeleteJob(job);
  }
  claimJob(leaseMs?: number): Promise<JobDoc | null> {
    return this.deleteJobs.claimJob(leaseMs);
  }

  /** Spec 4.3 purge: requests cache invalidation. The local CDN keeps no cache, so it is done at once. */
  async purge(p: Principal | null, id: string): Promise<AssetDoc> {
    this.writer(p, SCOPES.publish);
    const asset = await this.get(p, id);
    if (asset.status === 'deleting') throw assetNotFound();
    return asset;
  }

  // ---- signed URLs and delivery -------------------------------------------------------------

  // ---- replication (replication.ts) ---------------------------------------------------------

  replicateOnce(batch?: number): Promise<number> {
    return this.replication.replicateOnce(batch);
  }

  // ---- signed URLs and delivery (delivery.ts) -------------------------------------------------

  async signedUrl(
    p: Principal | null,
    id: string,
    expiresIn: number,
    maxDownloads: number | null | undefined,
    transformation?: string | null,
  ): Promise<{ url: string; expiresAt: Date; maxDownloads: number | null }> {
    const { accountId } = this.writer(p, SCOPES.publish);
    if (!Number.isInteger(expiresIn) || expiresIn < 1 || expiresIn > this.settings.ASSETS_SIGNED_URL_MAX_SECONDS) {
      throw badRequest('validation_failed', `expires_in must be 1 to ${this.settings.ASSETS_SIGNED_URL_MAX_SECONDS} seconds`);
    }
    if (maxDownloads !== undefined && maxDownloads !== null && (!Number.isInteger(maxDownloads) || maxDownloads < 1)) {
      throw badRequest('validation_failed', 'max_downloads must be a positive integer');
    }
    if (transformation) {
      // A signed transform address carries its own expiry and HMAC; downloads are not counted.
      if (maxDownloads !== undefined && maxDownloads !== null) {
        throw badRequest('validation_failed', 'max_downloads does not apply to a transformation address');
      }
      return { ...(await this.transforms.signedTransformUrl(p, id, transformation, expiresIn)), maxDownloads: null };
    }
    const asset = await this.get(p, id);
    if (asset.status === 'deleting') throw assetNotFound();
    return this.delivery.grantUrl(accountId, asset, expiresIn, maxDownloads ?? null);
  }

  locate(asset: AssetDoc, sha256: string) {
    return this.delivery.locate(asset, sha256);
  }
  /** Drops a cached delivery decision (after any change to the asset in this process). */
  forget(assetId: string): void {
    this.delivery.forget(assetId);
  }
  publicCurrent(assetId: string) {
    return this.delivery.publicCurrent(assetId);
  }
  anyAsset(assetId: string) {
    return this.delivery.anyAsset(assetId);
  }
  publicDelivery(assetId: string, versionId: string) {
    return this.delivery.publicDelivery(assetId, versionId);
  }
  signedDelivery(assetId: string, versionId: string, token: string | undefined) {
    return this.delivery.signedDelivery(assetId, versionId, token);
  }
}
