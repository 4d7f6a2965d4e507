import { PlatformError, notFound } from '../../../core/errors';
import type { Principal } from '../../../core/principal';
import type { BucketOpsModels, ObjstoreBucketDoc } from './model';
import type { BucketInput } from '../buckets';
import { type BucketDoc, SCOPES } from '../records';
import type { AssetsService } from '../storage';

/** Default index object of website mode. */
export const DEFAULT_INDEX_OBJECT = 'index.html';
/** How long a CDN process trusts its copy of a bucket's object-store mark and website settings. */
const MARK_CACHE_MS = 1000;

/**
 * The Assets bucket checks answer 400 (unknown region, replica = home). Behind these routes the
 * body already passed its schema, so such a refusal is a business one: 422 (the fuzz contract).
 */
const asBusinessStatus = (e: unknown): never => {
  if (e instanceof PlatformError && e.status === 400) throw new PlatformError(e.code, 422, e.message, e.details);
  throw e;
};

export const bucketNotFound = () => notFound('assets.bucket_not_found', 'bucket not found');

/** The storage settings `PUT /buckets/{id}/storage` changes (spec 2.3 bucket attributes). */
export type StorageInput = Pick<
  BucketInput,
  'versioning' | 'retentionDays' | 'maxBytes' | 'replicationPolicy' | 'defaultVisibility' | 'cacheControl'
>;

export interface WebsiteInput {
  enabled: boolean;
  indexObject?: string | null;
  errorObject?: string | null;
}

/**
 * Object-store buckets (spec 4.3 `/objstore-buckets`): Assets buckets marked as event sources, so
 * their objects' events reach subscriptions and the bucket's operations (`/api/v1/buckets/{id}/…`)
 * answer for them. The mark is its own document (`_id` = the bucket id), so the Assets bucket
 * record and its routes stay untouched. Another account's bucket, or a plain Assets bucket, is 404.
 */
export class ObjstoreBuckets {
  private readonly cache = new Map<string, { doc: ObjstoreBucketDoc | null; until: number }>();

  constructor(
    readonly m: BucketOpsModels,
    readonly assets: AssetsService,
  ) {}

  /** The caller's object-store bucket and its mark; 404 for anything else. */
  async require(accountId: string, bucketId: string): Promise<{ bucket: BucketDoc; mark: ObjstoreBucketDoc }> {
    const mark = await this.m.ObjstoreBucket.findById(bucketId).lean<ObjstoreBucketDoc>().exec();
    if (!mark || mark.accountId !== accountId) throw bucketNotFound();
    const bucket = await this.assets.m.Bucket.findOne({ _id: bucketId, accountId }).lean<BucketDoc>().exec();
    if (!bucket) throw bucketNotFound();
    return { bucket, mark };
  }

  /** The mark of any bucket (CDN and access-log paths, already keyed by an id), cached ~1 s. */
  async markOf(bucketId: string): Promise<ObjstoreBucketDoc | null> {
    const now = Date.now();
    const hit = this.cache.get(bucketId);
    if (hit && hit.until > now) return hit.doc;
    const doc = await this.m.ObjstoreBucket.findById(bucketId).lean<ObjstoreBucketDoc>().exec();
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(bucketId, { doc, until: now + MARK_CACHE_MS });
    return doc;
  }

  async list(p: Principal | null): Promise<BucketDoc[]> {
    const { accountId } = this.assets.reader(p);
    const marks = await this.m.ObjstoreBucket.find({ accountId })
      .sort({ createdAt: 1, _id: 1 })
      .lean<ObjstoreBucketDoc[]>()
      .exec();
    const out: BucketDoc[] = [];
    for (const mk of marks) {
      // By exact id: one indexed read each (a mark whose bucket was deleted is skipped).
      const b = await this.assets.m.Bucket.findOne({ _id: mk._id, accountId }).lean<BucketDoc>().exec();
      if (b) out.push(b);
    }
    return out;
  }

  /**
   * Makes the bucket, then its mark. A crash in between leaves a plain Assets bucket (visible in
   * `/buckets`, not here); creating it again answers 409 on the name, as any duplicate does.
   */
  async create(p: Principal | null, input: BucketInput): Promise<BucketDoc> {
    const { accountId } = this.assets.writer(p, SCOPES.admin);
    const bucket = await this.assets.buckets.create(accountId, input).catch(asBusinessStatus);
    const now = new Date();
    await this.m.ObjstoreBucket.create({ _id: bucket._id, accountId, website: null, createdAt: now, updatedAt: now });
    return bucket;
  }

  /** One conditional update of the bucket on its current revision (If-Match or body `revision`). */
  async updateStorage(
    p: Principal | null,
    bucketId: string,
    ifMatch: string | null | undefined,
    input: StorageInput,
  ): Promise<BucketDoc> {
    const { accountId } = this.assets.writer(p, SCOPES.admin);
    await this.require(accountId, bucketId);
    return this.assets.buckets.update(accountId, bucketId, ifMatch, input).catch(asBusinessStatus);
  }

  async website(p: Principal | null, bucketId: string): Promise<ObjstoreBucketDoc> {
    const { accountId } = this.assets.reader(p);
    return (await this.require(accountId, bucketId)).mark;
  }

  /** Website settings: one update of the mark; the CDN sees it within ~1 s. */
  async putWebsite(p: Principal | null, bucketId: string, input: WebsiteInput): Promise<ObjstoreBucketDoc> {
    const { accountId } = this.assets.writer(p, SCOPES.admin);
    await this.require(accountId, bucketId);
    const website = input.enabled
      ? { indexObject: input.indexObject ?? DEFAULT_INDEX_OBJECT, errorObject: input.errorObject ?? null }
      : null;
    const doc = await this.m.ObjstoreBucket.findOneAndUpdate(
      { _id: bucketId, accountId },
      { $set: { website, updatedAt: new Date() } },
      { new: true },
    )
      .lean<ObjstoreBucketDoc>()
      .exec();
    if (!doc) throw bucketNotFound();
    this.cache.delete(bucketId);
    return doc;
  }
}
