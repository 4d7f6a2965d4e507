import type { Readable } from 'node:stream';
import { z } from 'zod';
import { PlatformError, badRequest, notFound, paymentRequired } from '../../../core/errors';
import { newId } from '../../../core/ids';
import { isDuplicateKey } from '../../../core/mongo';
import type { Plan, Principal } from '../../../core/principal';
import { BlobTooLargeError, type BlobStore, type StagedBlob } from '../../../core/blobs/blob-store';
import type { AssetsSettings } from '../settings';
import type { Buckets } from '../buckets';
import { assetTypeOf, checkContent, type ContentPolicy, largestAllowed, policyOf, sniffMime, type Scanner } from '../scanning';
import {
  objectEventEntry,
  type AssetDoc,
  type AssetModels,
  type BucketDoc,
  VISIBILITIES,
  MAX_KEY_LENGTH,
  MAX_METADATA_BYTES,
  checkCacheControl,
  checkFolder,
  checkKey,
  checkMetadataSize,
} from '../records';
import { requiredRevision, revisionStale } from '../revisions';

export { MAX_KEY_LENGTH, MAX_METADATA_BYTES };

/** The text fields of a multipart upload (spec 2.3), as strings from the form. */
export const uploadFieldsSchema = z
  .object({
    bucket: z.string().min(1).optional(),
    key: z.string().min(1).max(MAX_KEY_LENGTH).optional(),
    folder: z.string().max(MAX_KEY_LENGTH).optional(),
    visibility: z.enum(VISIBILITIES).optional(),
    cache_control: z.string().min(1).max(256).optional(),
    metadata: z.string().max(MAX_METADATA_BYTES).optional(),
    checksum_sha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/)
      .optional(),
    tags: z.string().max(4096).optional(),
    /** Replace only: the branch the new version goes on (default: the main line). */
    branch: z.string().max(64).optional(),
  })
  .strict();
export type UploadFields = z.infer<typeof uploadFieldsSchema>;

export function parseUploadFields(raw: Record<string, string>): UploadFields {
  const parsed = uploadFieldsSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw badRequest('validation_failed', `${issue.path.join('.') || 'form'}: ${issue.message}`);
  }
  // The stored fields' own rules (asset-fields.ts), before any byte is kept.
  if (parsed.data.key !== undefined) checkKey(parsed.data.key);
  if (parsed.data.folder !== undefined) checkFolder(normFolder(parsed.data.folder));
  if (parsed.data.cache_control !== undefined) checkCacheControl(parsed.data.cache_control);
  return parsed.data;
}

function parseMetadata(raw: string | undefined): Record<string, unknown> {
  if (raw === undefined || raw === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    throw badRequest('validation_failed', 'metadata must be a JSON object');
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    throw badRequest('validation_failed', 'metadata must be a JSON object');
  return checkMetadataSize(v as Record<string, unknown>);
}

function parseTags(raw: string | undefined): string[] {
  if (!raw) return [];
  const tags = raw.trim().startsWith('[') ? (JSON.parse(raw) as unknown) : raw.split(',');
  if (!Array.isArray(tags) || tags.some((t) => typeof t !== 'string'))
    throw badRequest('validation_failed', 'tags must be strings');
  return [...new Set((tags as string[]).map((t) => t.trim()).filter(Boolean))];
}

const normFolder = (f: string | undefined) => (f ?? '').replace(/^\/+|\/+$/g, '');
const safeName = (n: string | undefined) => (n && n.trim() ? n.trim().slice(0, 255) : 'file');

/**
 * What an upload's request read before its last byte, for `create`/`replace` to use instead of
 * reading again (decision 0240): the content policy its quota hold read, and the bucket the form
 * named when its file began (`field` undefined: the default bucket; `doc` null: not found then).
 */
export interface ReadAhead {
  policy?: ContentPolicy;
  bucket?: { field: string | undefined; doc: Promise<BucketDoc | null> };
}

/** The checks every new version goes through, in the order a user sees their failures. */
interface Accepted {
  mime: string;
  infected: boolean;
}

/**
 * Streamed uploads: the bytes go from the socket to a staged blob (hashed and counted on the way),
 * are checked, and only then committed and recorded. Any failure discards the staged bytes, so no
 * blob and no record outlive a refused upload.
 */
export class Uploads {
  constructor(
    private readonly m: AssetModels,
    private readonly blobs: BlobStore,
    private readonly buckets: Buckets,
    private readonly scanner: Scanner,
    private readonly settings: AssetsSettings,
    private readonly objectsTopic: () => string,
    /** Called with an asset whose new version is stored (eager transformations queue their job). */
    private readonly onStored: (asset: AssetDoc) => Promise<void> = async () => undefined,
  ) {}

  async policy(accountId: string): Promise<ContentPolicy> {
    return policyOf(await this.m.AccountState.findById(accountId).lean().exec());
  }

  /**
   * The largest file the account may store in one piece: the policy's largest limit, bounded by the
   * plan's quota (a policy cannot promise more than the plan holds; decision 0098).
   */
  async largestFile(accountId: string, plan: Plan): Promise<number> {
    return Math.min(largestAllowed(await this.policy(accountId)), this.quotaOf(plan));
  }

  /**
   * Looks up, without making anything, the bucket a form names (or the account's default one) while
   * its file streams; null when absent or unreadable (then `create` looks again, as without it).
   */
  lookAheadBucket(accountId: string, field: string | undefined): NonNullable<ReadAhead['bucket']> {
    const doc = (field ? this.buckets.get(accountId, field) : this.buckets.findDefault(accountId)).catch(() => null);
    return { field, doc };
  }

  /** What is left of the account's quota now. */
  async remaining(accountId: string, plan: Plan): Promise<number> {
    const state = await this.m.AccountState.findById(accountId, { usedBytes: 1 }).lean<{ usedBytes?: number }>().exec();
    return Math.max(0, this.quotaOf(plan) - (state?.usedBytes ?? 0));
  }

  /**
   * Streams one file into a staged blob. The stream is cut (nothing kept) at the first byte past
   * the largest file the policy and plan allow (400 `assets.policy_violation`), past `maxBytes`
   * (a session's declared size: 413 `assets.payload_too_large`), or — with `plan` — past what is
   * left of the account's quota (402 `assets.quota_exceeded`), so no limit is checked only after
   * the bytes arrived. `held` may still be in flight (decision 0255): the first bytes then wait in
   * the stream's buffer, none is stored before the hold is taken, and its refusal is the stage's.
   */
  async stage(
    accountId: string,
    source: Readable,
    opts: { plan?: Plan; maxBytes?: number; held?: number | Promise<number> } = {},
  ): Promise<StagedBlob> {
    const largest = () =>
      opts.plan ? this.largestFile(accountId, opts.plan) : this.policy(accountId).then((p) => largestAllowed(p));
    // With `held`, the caller already reserved that much quota for this file (`hold`: never more than
    // the largest file allowed), so the policy is read again only to name a refusal: one command less.
    let policyMax = opts.held === undefined ? await largest() : Infinity;
    const declared = opts.maxBytes ?? Infinity;
    let quotaLeft = Infinity;
    const cap = (async () => {
      quotaLeft = (await opts.held) ?? (opts.plan ? await this.remaining(accountId, opts.plan) : Infinity);
      return Math.min(policyMax, quotaLeft, declared);
    })();
    // Seen by the store (or below); a refused hold is the stage's failure, never an unhandled one.
    cap.catch(() => undefined);
    try {
      return await this.blobs.stage(source, { maxBytes: opts.held instanceof Promise ? cap : await cap });
    } catch (e) {
      if (e instanceof BlobTooLargeError) {
        const limit = await cap;
        if (policyMax === Infinity) policyMax = await largest();
        if (limit === declared) {
          throw new PlatformError('assets.payload_too_large', 413, `the body is larger than the declared ${declared} bytes`, {
            limit: declared,
          });
        }
        if (limit === quotaLeft && quotaLeft < policyMax) {
          throw paymentRequired('assets.quota_exceeded', 'the account has no room for this file', {
            quota_bytes: this.quotaOf(opts.plan!),
            remaining_bytes: quotaLeft,
            ...(opts.held !== undefined ? { reserved_bytes: quotaLeft } : {}),
          });
        }
        throw new PlatformError('assets.policy_violation', 400, `a file may be at most ${e.maxBytes} bytes`, {
          limit: e.maxBytes,
        });
      }
      throw e;
    }
  }

  private quota(p: Principal): number {
    return this.quotaOf(p.plan);
  }

  quotaOf(plan: Plan): number {
    return plan === 'pro' ? this.settings.ASSETS_QUOTA_BYTES_PRO : this.settings.ASSETS_QUOTA_BYTES_FREE;
  }

  /** Takes `bytes` of the account's quota with one conditional `$inc` (402 when it would overflow). */
  async reserve(p: Principal, bytes: number): Promise<void> {
    if (bytes <= 0) return; // an empty file takes no room (an $inc of 0 modifies nothing)
    const limit = this.quota(p);
    const take = () =>
      this.m.AccountState.updateOne({ _id: p.accountId, usedBytes: { $lte: limit - bytes } }, { $inc: { usedBytes: bytes } });
    // The account's counter is created (at 0) only when the first `$inc` found none: one command when it exists.
    let res = await take();
    if (res.modifiedCount !== 1) {
      await this.m.AccountState.updateOne({ _id: p.accountId }, { $setOnInsert: { usedBytes: 0 } }, { upsert: true });
      res = await take();
    }
    if (res.modifiedCount !== 1) {
      throw paymentRequired('assets.quota_exceeded', 'the account has no room for this file', {
        quota_bytes: limit,
        size: bytes,
      });
    }
  }

  /**
   * The reservation of an upload whose size is not declared (a multipart upload, a replace, the
   * widget), taken before its first byte (decision 0140): `upTo` bytes when the request says its
   * length (`Content-Length` bounds the file), else whatever is left of the quota — bounded by the
   * largest file the policy and plan allow. 402 at once when there is no room. Taken with the same
   * conditional `$inc` as `reserve` (retried while other uploads move the counter), so concurrent
   * uploads never hold more than the quota between them. Returns the bytes held; the caller settles
   * them to the file's size (`settle`) or gives them back (`release`).
   */
  async hold(p: Principal, upTo: number | undefined): Promise<number> {
    return (await this.holdWithPolicy(p, upTo)).held;
  }

  /**
   * `hold`, also answering the content policy it read: the request's later content check uses it
   * instead of reading the account again after the last byte (decision 0240).
   */
  async holdWithPolicy(p: Principal, upTo: number | undefined): Promise<{ held: number; policy: ContentPolicy }> {
    const policy = await this.policy(p.accountId);
    const largest = Math.min(largestAllowed(policy), this.quotaOf(p.plan));
    if (upTo !== undefined) {
      await this.reserve(p, Math.min(upTo, largest));
      return { held: Math.min(upTo, largest), policy };
    }
    for (let attempt = 0; ; attempt++) {
      const want = Math.min(largest, await this.remaining(p.accountId, p.plan));
      if (want <= 0 || attempt >= 8) {
        throw paymentRequired('assets.quota_exceeded', 'the account has no room for this file', {
          quota_bytes: this.quota(p),
          remaining_bytes: Math.max(0, want),
        });
      }
      try {
        await this.reserve(p, want);
        return { held: want, policy };
      } catch (e) {
        // Another upload moved the counter between the read and the `$inc`: read again.
        if (!(e instanceof PlatformError && e.status === 402)) throw e;
      }
    }
  }

  /** Brings a hold down to what the file really uses (the rest goes back to the account). */
  async settle(accountId: string, held: number, size: number): Promise<number> {
    await this.release(accountId, held - size);
    return size;
  }

  async release(accountId: string, bytes: number): Promise<void> {
    if (bytes > 0) await this.m.AccountState.updateOne({ _id: accountId }, { $inc: { usedBytes: -bytes } });
  }

  private async accept(
    accountId: string,
    staged: StagedBlob,
    bucket: Parameters<typeof checkContent>[1],
    fields: UploadFields,
    policy?: ContentPolicy,
  ): Promise<Accepted> {
    const mime = await sniffMime(staged.head);
    checkContent(policy ?? (await this.policy(accountId)), bucket, mime, staged.size);
    if (fields.checksum_sha256 && fields.checksum_sha256.toLowerCase() !== staged.sha256) {
      throw new PlatformError('assets.checksum_mismatch', 422, 'the bytes do not match checksum_sha256', {
        expected: fields.checksum_sha256.toLowerCase(),
        received: staged.sha256,
      });
    }
    const verdict = await this.scanner.scan(staged.head, staged.size, () => {
      throw new Error('the default scanner reads only the head');
    });
    return { mime, infected: verdict === 'infected' };
  }

  /** Removes a committed blob unless another version (of any asset) still uses it. */
  async dropBlobIfUnused(sha256: string, regions: string[], exceptAssetId?: string): Promise<void> {
    // A blob is used by a recorded version, or by a replace that committed it and is recording it.
    const filter: Record<string, unknown> = { $or: [{ 'versions.sha256': sha256 }, { pendingBlobs: sha256 }] };
    if (exceptAssetId) filter._id = { $ne: exceptAssetId };
    if (await this.m.Asset.exists(filter)) return;
    for (const r of regions) await this.blobs.remove(r, sha256);
  }

  /** A new asset from a staged file. The caller discards `staged` afterwards whatever happens. */
  /**
   * `reserved`: the caller already holds `staged.size` bytes of quota for this file (an upload
   * session reserves at creation) and keeps owning them if this fails; otherwise the quota is
   * taken here and given back on failure. `read`: what the caller already read for this request
   * (the policy its hold read; the bucket `fields.bucket` names, or the default one, looked up while
   * the bytes streamed), so those reads are not repeated after the last byte (decision 0240); a
   * bucket looked up as absent is looked up (or the default made) here as without it.
   */
  async create(
    p: Principal,
    staged: StagedBlob,
    fileName: string | undefined,
    fields: UploadFields,
    opts: { reserved?: boolean; read?: ReadAhead } = {},
  ): Promise<AssetDoc> {
    const ahead = opts.read?.bucket && opts.read.bucket.field === fields.bucket ? await opts.read.bucket.doc : null;
    const bucket =
      ahead ??
      (fields.bucket
        ? await this.buckets.get(p.accountId, fields.bucket).catch(() => {
            throw notFound('assets.bucket_not_found', 'bucket not found');
          })
        : await this.buckets.ensureDefault(p.accountId));
    const originalName = safeName(fileName);
    const folder = checkFolder(normFolder(fields.folder));
    const key = checkKey(fields.key ?? (folder ? `${folder}/${originalName}` : originalName));
    if (fields.cache_control !== undefined) checkCacheControl(fields.cache_control);
    const metadata = parseMetadata(fields.metadata);
    const tags = parseTags(fields.tags);
    const { mime, infected } = await this.accept(p.accountId, staged, bucket, fields, opts.read?.policy);
    if (!opts.reserved) await this.reserve(p, staged.size);
    const giveBack = () => (opts.reserved ? Promise.resolve() : this.release(p.accountId, staged.size));
    const now = new Date();
    const replicas = bucket.replicationPolicy?.regions ?? [];
    const doc: AssetDoc = {
      _id: newId(),
      accountId: p.accountId,
      bucketId: bucket._id,
      key,
      folder,
      visibility: fields.visibility ?? bucket.defaultVisibility,
      cacheControl: fields.cache_control ?? bucket.cacheControl,
      metadata,
      originalName,
      tags,
      mimeType: mime,
      type: assetTypeOf(mime),
      size: staged.size,
      checksum: staged.sha256,
      status: 'processing',
      scanStatus: 'pending',
      replicationStatus: replicas.length > 0 ? 'pending' : 'not_required',
      moderationStatus: 'not_requested',
      quarantineStatus: 'none',
      revision: 1,
      currentVersion: 1,
      versions: [
        { number: 1, sha256: staged.sha256, size: staged.size, mimeType: mime, originalName, branch: 'main', createdAt: now },
      ],
      branches: [],
      homeRegion: bucket.homeRegion,
      replicaRegions: replicas,
      replicatedRegions: [],
      createdAt: now,
      updatedAt: now,
      outbox: [],
    };
    // The record first (as `processing`), so a duplicate key is refused before any blob is committed.
    try {
      await this.m.Asset.create(doc);
    } catch (e) {
      await giveBack();
      if (isDuplicateKey(e))
        throw new PlatformError('assets.duplicate_key', 409, `key ${key} already exists in this bucket`, { key });
      throw e;
    }
    try {
      await this.blobs.commit(staged, bucket.homeRegion);
    } catch (e) {
      await this.m.Asset.deleteOne({ _id: doc._id });
      await giveBack();
      throw e;
    }
    const set = {
      status: infected ? 'quarantined' : 'ready',
      scanStatus: infected ? 'infected' : 'clean',
      quarantineStatus: infected ? 'quarantined' : 'none',
      updatedAt: new Date(),
    } as const;
    const event = objectEventEntry(this.objectsTopic(), {
      type: 'object.created',
      asset: doc,
      version: 1,
      size: staged.size,
      contentType: mime,
      sha256: staged.sha256,
    });
    await this.m.Asset.updateOne({ _id: doc._id, status: 'processing' }, { $set: set, $push: { outbox: event } });
    const stored = { ...doc, ...set };
    await this.onStored(stored);
    return stored;
  }

  /**
   * A new version of an existing asset (same id). With `branch`, the version goes on that branch
   * and the current version stays; otherwise it becomes current. `If-Match` is honoured when sent.
   * `reserved`: as for `create` (the caller holds `staged.size` bytes and keeps them on failure).
   */
  async replace(
    p: Principal,
    assetId: string,
    ifMatch: string | null | undefined,
    staged: StagedBlob,
    fileName: string | undefined,
    fields: UploadFields,
    opts: { reserved?: boolean; read?: ReadAhead } = {},
  ): Promise<AssetDoc> {
    const current = await this.m.Asset.findOne({ _id: assetId, accountId: p.accountId }).lean<AssetDoc>().exec();
    if (!current || current.status === 'deleting') throw notFound('assets.not_found', 'asset not found');
    const expected = ifMatch ? requiredRevision(ifMatch) : current.revision;
    if (expected !== current.revision) throw revisionStale(current.revision);
    const bucket = await this.buckets.get(p.accountId, current.bucketId);
    const { mime, infected } = await this.accept(p.accountId, staged, bucket, fields, opts.read?.policy);
    const branch = fields.branch && fields.branch !== 'main' ? fields.branch : null;
    if (branch && !current.branches.some((b) => b.name === branch)) throw notFound('assets.branch_not_found', 'branch not found');
    if (!opts.reserved) await this.reserve(p, staged.size);
    const giveBack = () => (opts.reserved ? Promise.resolve() : this.release(p.accountId, staged.size));
    const now = new Date();
    const number = Math.max(...current.versions.map((v) => v.number)) + 1;
    const originalName = fileName ? safeName(fileName) : current.originalName;
    const version = {
      number,
      sha256: staged.sha256,
      size: staged.size,
      mimeType: mime,
      originalName,
      branch: branch ?? 'main',
      createdAt: now,
    };
    // The blob is marked in use on the record before it is committed, so an unused-blob check
    // running between the commit and the version's record (another asset's delete, a lifecycle
    // rule, the abandoned-upload sweep) keeps it. The mark goes with the record, or on failure.
    await this.m.Asset.updateOne({ _id: assetId, accountId: p.accountId }, { $addToSet: { pendingBlobs: staged.sha256 } });
    const unmark = () =>
      this.m.Asset.updateOne({ _id: assetId, accountId: p.accountId }, { $pull: { pendingBlobs: staged.sha256 } });
    try {
      await this.blobs.commit(staged, current.homeRegion);
    } catch (e) {
      await unmark();
      await giveBack();
      throw e;
    }
    const update: Record<string, unknown> = {
      $push: { versions: version },
      $pull: { pendingBlobs: staged.sha256 },
      $inc: { revision: 1 },
      $set: { updatedAt: now },
    };
    if (branch) {
      // The whole array under the revision guard (the wire server has no arrayFilters).
      (update.$set as Record<string, unknown>).branches = current.branches.map((b) =>
        b.name === branch ? { ...b, version: number } : b,
      );
    } else {
      Object.assign(update.$set as Record<string, unknown>, {
        currentVersion: number,
        mimeType: mime,
        type: assetTypeOf(mime),
        size: staged.size,
        checksum: staged.sha256,
        originalName,
        status: infected ? 'quarantined' : 'ready',
        scanStatus: infected ? 'infected' : 'clean',
        quarantineStatus: infected ? 'quarantined' : 'none',
        replicationStatus: current.replicaRegions.length > 0 ? 'pending' : 'not_required',
        replicatedRegions: [],
      });
      (update.$push as Record<string, unknown>).outbox = objectEventEntry(this.objectsTopic(), {
        type: 'object.overwritten',
        asset: current,
        version: number,
        size: staged.size,
        contentType: mime,
        sha256: staged.sha256,
      });
    }
    const updated = await this.m.Asset.findOneAndUpdate(
      { _id: assetId, accountId: p.accountId, revision: current.revision, status: { $ne: 'deleting' } },
      update,
      { new: true },
    )
      .lean<AssetDoc>()
      .exec();
    if (!updated) {
      await unmark();
      await giveBack();
      await this.dropBlobIfUnused(staged.sha256, [current.homeRegion]);
      throw revisionStale();
    }
    await this.onStored(updated);
    return updated;
  }
}
