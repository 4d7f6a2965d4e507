import { PlatformError, badRequest, notFound } from '../../../core/errors';
import { newId } from '../../../core/ids';
import { isDuplicateKey } from '../../../core/mongo';
import { type AssetModels, type BucketDoc, type Visibility, checkCacheControl, checkVisibility } from '../records';
import { requiredRevision, revisionStale } from '../revisions';

/** The bucket an upload without `bucket` goes to; made on first use. */
export const DEFAULT_BUCKET_NAME = 'default';
export const DEFAULT_CACHE_CONTROL = 'public, max-age=3600';

export interface BucketInput {
  name?: string;
  defaultVisibility?: Visibility;
  cacheControl?: string;
  versioning?: boolean;
  retentionDays?: number | null;
  maxBytes?: number | null;
  allowedMimeTypes?: string[] | null;
  allowedOrigins?: string[];
  homeRegion?: string;
  replicationPolicy?: { regions: string[] };
  lifecyclePolicy?: Record<string, unknown> | null;
  domain?: string | null;
}

const bucketNotFound = () => notFound('assets.bucket_not_found', 'bucket not found');

/** The longest retention a bucket takes, in days (100 years): the REST body (body.ts) documents the same. */
export const RETENTION_DAYS_MAX = 36_500;

function checkRetention(days: number | null | undefined): void {
  if (days === undefined || days === null) return;
  if (!Number.isInteger(days) || days < 0 || days > RETENTION_DAYS_MAX) {
    const problem = `must be an integer from 0 to ${RETENTION_DAYS_MAX}`;
    throw badRequest('validation_failed', `retention_days: ${problem}`, { fields: [{ field: 'retention_days', problem }] });
  }
}

/** Buckets of an account's default Assets space; every change is guarded by the bucket revision. */
export class Buckets {
  constructor(
    private readonly m: AssetModels,
    private readonly regions: string[],
  ) {}

  private checkRegions(input: BucketInput, home: string): void {
    const known = (r: string) => this.regions.includes(r);
    if (input.homeRegion !== undefined && !known(input.homeRegion)) {
      throw badRequest('assets.unknown_region', `unknown region ${input.homeRegion}`, { regions: this.regions });
    }
    for (const r of input.replicationPolicy?.regions ?? []) {
      if (!known(r)) throw badRequest('assets.unknown_region', `unknown region ${r}`, { regions: this.regions });
      if (r === home) throw badRequest('assets.invalid_replication', 'a replica region must differ from the home region');
    }
  }

  async list(accountId: string): Promise<BucketDoc[]> {
    return this.m.Bucket.find({ accountId }).sort({ createdAt: 1, _id: 1 }).lean<BucketDoc[]>().exec();
  }

  async get(accountId: string, id: string): Promise<BucketDoc> {
    const b = await this.m.Bucket.findOne({ _id: id, accountId }).lean<BucketDoc>().exec();
    if (!b) throw bucketNotFound();
    return b;
  }

  async create(accountId: string, input: BucketInput): Promise<BucketDoc> {
    if (!input.name) throw badRequest('validation_failed', 'name is required');
    if (input.cacheControl !== undefined) checkCacheControl(input.cacheControl);
    checkRetention(input.retentionDays);
    if (input.defaultVisibility !== undefined) checkVisibility(input.defaultVisibility, 'default_visibility');
    const home = input.homeRegion ?? this.regions[0];
    this.checkRegions(input, home);
    const now = new Date();
    const doc: BucketDoc = {
      _id: newId(),
      accountId,
      name: input.name,
      defaultVisibility: input.defaultVisibility ?? 'private',
      cacheControl: input.cacheControl ?? DEFAULT_CACHE_CONTROL,
      versioning: input.versioning ?? true,
      retentionDays: input.retentionDays ?? null,
      maxBytes: input.maxBytes ?? null,
      allowedMimeTypes: input.allowedMimeTypes ?? null,
      allowedOrigins: input.allowedOrigins ?? [],
      homeRegion: home,
      replicationPolicy: { regions: input.replicationPolicy?.regions ?? [] },
      lifecyclePolicy: input.lifecyclePolicy ?? null,
      domain: input.domain ?? null,
      revision: 1,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await this.m.Bucket.create(doc);
    } catch (e) {
      if (isDuplicateKey(e)) throw new PlatformError('assets.bucket_exists', 409, `a bucket named ${input.name} exists`);
      throw e;
    }
    return doc;
  }

  /** The account's default bucket if it was made (null before its first use). */
  findDefault(accountId: string): Promise<BucketDoc | null> {
    return this.m.Bucket.findOne({ accountId, name: DEFAULT_BUCKET_NAME }).lean<BucketDoc>().exec();
  }

  /** The account's default bucket, made on first use (an upsert on the unique name, so two racers get one). */
  async ensureDefault(accountId: string): Promise<BucketDoc> {
    const found = await this.findDefault(accountId);
    if (found) return found;
    try {
      return await this.create(accountId, { name: DEFAULT_BUCKET_NAME, defaultVisibility: 'private' });
    } catch (e) {
      if (e instanceof PlatformError && e.code === 'assets.bucket_exists') {
        const b = await this.m.Bucket.findOne({ accountId, name: DEFAULT_BUCKET_NAME }).lean<BucketDoc>().exec();
        if (b) return b;
      }
      throw e;
    }
  }

  /** Replaces the settings given; one conditional update on the revision in `If-Match`. */
  async update(accountId: string, id: string, ifMatch: string | null | undefined, input: BucketInput): Promise<BucketDoc> {
    if (input.cacheControl !== undefined) checkCacheControl(input.cacheControl);
    if (input.defaultVisibility !== undefined) checkVisibility(input.defaultVisibility, 'default_visibility');
    checkRetention(input.retentionDays);
    const revision = requiredRevision(ifMatch);
    const current = await this.get(accountId, id);
    this.checkRegions(input, input.homeRegion ?? current.homeRegion);
    const set: Record<string, unknown> = { updatedAt: new Date() };
    for (const [k, v] of Object.entries(input)) if (v !== undefined) set[k] = v;
    let updated: BucketDoc | null;
    try {
      updated = await this.m.Bucket.findOneAndUpdate(
        { _id: id, accountId, revision },
        { $set: set, $inc: { revision: 1 } },
        { new: true },
      )
        .lean<BucketDoc>()
        .exec();
    } catch (e) {
      if (isDuplicateKey(e)) throw new PlatformError('assets.bucket_exists', 409, `a bucket named ${input.name} exists`);
      throw e;
    }
    if (!updated) throw revisionStale((await this.get(accountId, id)).revision);
    return updated;
  }

  /** Deletes an empty bucket (409 while it holds assets). */
  async remove(accountId: string, id: string, ifMatch: string | null | undefined): Promise<BucketDoc> {
    const revision = requiredRevision(ifMatch);
    const current = await this.get(accountId, id);
    if (await this.m.Asset.exists({ accountId, bucketId: id })) {
      throw new PlatformError('assets.bucket_not_empty', 409, 'the bucket still holds assets');
    }
    const res = await this.m.Bucket.deleteOne({ _id: id, accountId, revision });
    if (res.deletedCount !== 1) throw revisionStale(current.revision);
    return current;
  }
}
