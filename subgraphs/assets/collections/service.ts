import type { Model } from 'mongoose';
import { PlatformError, badRequest, notFound } from '../../../core/errors';
import { newId } from '../../../core/ids';
import { findPage } from '../../../core/keyset';
import { isDuplicateKey } from '../../../core/mongo';
import type { Principal } from '../../../core/principal';
import type { CollectionDoc, OrganisationModels, SavedSearchDoc } from './model';
import type { AssetDoc } from '../records';
import { requiredRevision, revisionStale } from '../revisions';
import { type AssetsService, type ListFilter, SORT_FIELDS, type SortKey } from '../storage';

/** Asset ids one collection holds at most. */
export const COLLECTION_MAX_ASSETS = 1000;
/** Collections and saved searches per list page: default 25, at most 100 (the list shape of docs/contracts.md). */
export const ORG_LIST_LIMIT_DEFAULT = 25;
export const ORG_LIST_LIMIT_MAX = 100;

/** The list route's filter names (snake_case, spec 4.3) and the service's names for them. */
export const SEARCH_FILTER_FIELDS = {
  bucket: 'bucket',
  prefix: 'prefix',
  visibility: 'visibility',
  query: 'query',
  tag: 'tag',
  mime_type: 'mimeType',
  type: 'type',
  folder: 'folder',
  checksum: 'checksum',
  status: 'status',
  scan_status: 'scanStatus',
  replication_status: 'replicationStatus',
  moderation_status: 'moderationStatus',
  quarantine_status: 'quarantineStatus',
} as const satisfies Record<string, keyof ListFilter>;

export interface Page<T> {
  items: T[];
  nextCursor: string;
}

interface Named {
  _id: string;
  createdAt: Date;
}

/** Keyset page over one account's records, newest first; the cursor is bound to the kind and account. */
async function page<T extends Named>(
  model: Model<T>,
  accountId: string,
  kind: string,
  limit: number | null | undefined,
  cursor: string | null | undefined,
): Promise<Page<T>> {
  const n = limit ?? ORG_LIST_LIMIT_DEFAULT;
  if (!Number.isInteger(n) || n < 1 || n > ORG_LIST_LIMIT_MAX)
    throw badRequest('validation_failed', `limit is 1 to ${ORG_LIST_LIMIT_MAX}`);
  const binding = `${kind}:${accountId}`;
  const page = await findPage<T>(
    model,
    { accountId },
    { field: 'createdAt', binding, position: { value: 't', id: 'id', form: 'iso' }, limit: n, cursor },
  );
  return { items: page.items, nextCursor: page.nextCursor ?? '' };
}

/** The same rules as the REST rows, for GraphQL callers. */
function checkName(name: string): string {
  if (typeof name !== 'string' || !name.trim() || name.length > 128)
    throw badRequest('validation_failed', 'name is 1 to 128 characters');
  return name;
}
function checkFilter(filter: Record<string, unknown>): Record<string, string> {
  const allowed = new Set([...Object.keys(SEARCH_FILTER_FIELDS), 'sort', 'direction']);
  for (const [k, v] of Object.entries(filter ?? {})) {
    if (!allowed.has(k)) throw badRequest('validation_failed', `filter.${k} is not a filter of the assets list`);
    if (typeof v !== 'string') throw badRequest('validation_failed', `filter.${k} must be a string`);
  }
  if (filter.sort !== undefined && !(String(filter.sort) in SORT_FIELDS))
    throw badRequest('validation_failed', `filter.sort must be one of ${Object.keys(SORT_FIELDS).join(', ')}`);
  if (filter.direction !== undefined && !['asc', 'desc'].includes(String(filter.direction)))
    throw badRequest('validation_failed', 'filter.direction must be asc or desc');
  return filter as Record<string, string>;
}

const duplicateName = (kind: string) =>
  new PlatformError(`assets.${kind}_name_taken`, 409, `a ${kind.replace('_', ' ')} with this name exists`);

/**
 * Collections and saved searches (spec 4.3 "DAM organization"). Both are account records guarded
 * by a revision: `PUT` and `DELETE` need `If-Match` (428 without, 412 when stale), and the write
 * is one conditional update on `{_id, revision}`, so of concurrent writers exactly one wins.
 */
export class Organisation {
  constructor(
    private readonly m: OrganisationModels,
    private readonly assets: AssetsService,
  ) {}

  // ---- collections ----------------------------------------------------------------------------

  listCollections(p: Principal | null, limit?: number | null, cursor?: string | null): Promise<Page<CollectionDoc>> {
    return page<CollectionDoc>(this.m.Collection, this.assets.reader(p).accountId, 'collections', limit, cursor);
  }

  async getCollection(p: Principal | null, id: string): Promise<CollectionDoc> {
    const { accountId } = this.assets.reader(p);
    const doc = await this.m.Collection.findById(id).lean<CollectionDoc>().exec();
    if (!doc || doc.accountId !== accountId) throw notFound('assets.collection_not_found', 'collection not found');
    return doc;
  }

  /** Every id must name an asset of the account (400 with the unknown ones otherwise). */
  private async checkAssetIds(accountId: string, ids: string[]): Promise<string[]> {
    const unique = [...new Set(ids)];
    if (unique.length > COLLECTION_MAX_ASSETS)
      throw badRequest('validation_failed', `a collection holds at most ${COLLECTION_MAX_ASSETS} assets`);
    if (!unique.length) return unique;
    const found = await this.assets.m.Asset.find({ _id: { $in: unique }, accountId, status: { $ne: 'deleting' } }, { _id: 1 })
      .lean<Pick<AssetDoc, '_id'>[]>()
      .exec();
    const known = new Set(found.map((a) => a._id));
    const unknown = unique.filter((i) => !known.has(i));
    if (unknown.length)
      // Spec 7.3: an asset that is not visible is a 404 (the request itself is well formed).
      throw notFound('assets.unknown_assets', 'asset_ids names assets that do not exist', { unknown_asset_ids: unknown });
    return unique;
  }

  async createCollection(
    p: Principal | null,
    input: { name: string; description?: string | null; assetIds?: string[] | null },
  ): Promise<CollectionDoc> {
    const { accountId } = this.assets.writer(p);
    checkName(input.name);
    const now = new Date();
    const doc: CollectionDoc = {
      _id: newId(),
      accountId,
      name: input.name,
      description: input.description ?? null,
      assetIds: await this.checkAssetIds(accountId, input.assetIds ?? []),
      revision: 1,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await this.m.Collection.create(doc);
    } catch (e) {
      if (isDuplicateKey(e)) throw duplicateName('collection');
      throw e;
    }
    return doc;
  }

  /** Replaces the fields sent (name, description, asset ids); `If-Match` required. */
  async updateCollection(
    p: Principal | null,
    id: string,
    ifMatch: string | null | undefined,
    input: { name?: string | null; description?: string | null; assetIds?: string[] | null },
  ): Promise<CollectionDoc> {
    const { accountId } = this.assets.writer(p);
    const revision = requiredRevision(ifMatch);
    await this.getCollection(p, id);
    const set: Partial<CollectionDoc> = { updatedAt: new Date() };
    if (input.name !== undefined && input.name !== null) set.name = checkName(input.name);
    if (input.description !== undefined) set.description = input.description;
    if (input.assetIds !== undefined && input.assetIds !== null)
      set.assetIds = await this.checkAssetIds(accountId, input.assetIds);
    let doc: CollectionDoc | null;
    try {
      doc = await this.m.Collection.findOneAndUpdate({ _id: id, revision }, { $set: set, $inc: { revision: 1 } }, { new: true })
        .lean<CollectionDoc>()
        .exec();
    } catch (e) {
      if (isDuplicateKey(e)) throw duplicateName('collection');
      throw e;
    }
    if (doc) return doc;
    const now = await this.getCollection(p, id);
    throw revisionStale(now.revision);
  }

  async deleteCollection(p: Principal | null, id: string, ifMatch: string | null | undefined): Promise<CollectionDoc> {
    this.assets.writer(p);
    const revision = requiredRevision(ifMatch);
    const current = await this.getCollection(p, id);
    const res = await this.m.Collection.deleteOne({ _id: id, revision });
    if (res.deletedCount !== 1) throw revisionStale((await this.getCollection(p, id)).revision);
    return current;
  }

  // ---- saved searches -------------------------------------------------------------------------

  listSavedSearches(p: Principal | null, limit?: number | null, cursor?: string | null): Promise<Page<SavedSearchDoc>> {
    return page<SavedSearchDoc>(this.m.SavedSearch, this.assets.reader(p).accountId, 'saved_searches', limit, cursor);
  }

  async getSavedSearch(p: Principal | null, id: string): Promise<SavedSearchDoc> {
    const { accountId } = this.assets.reader(p);
    const doc = await this.m.SavedSearch.findById(id).lean<SavedSearchDoc>().exec();
    if (!doc || doc.accountId !== accountId) throw notFound('assets.saved_search_not_found', 'saved search not found');
    return doc;
  }

  async createSavedSearch(p: Principal | null, input: { name: string; filter: Record<string, string> }): Promise<SavedSearchDoc> {
    const { accountId } = this.assets.writer(p);
    checkName(input.name);
    checkFilter(input.filter);
    const now = new Date();
    const doc: SavedSearchDoc = {
      _id: newId(),
      accountId,
      name: input.name,
      filter: input.filter,
      revision: 1,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await this.m.SavedSearch.create(doc);
    } catch (e) {
      if (isDuplicateKey(e)) throw duplicateName('saved_search');
      throw e;
    }
    return doc;
  }

  async updateSavedSearch(
    p: Principal | null,
    id: string,
    ifMatch: string | null | undefined,
    input: { name?: string | null; filter?: Record<string, string> | null },
  ): Promise<SavedSearchDoc> {
    this.assets.writer(p);
    const revision = requiredRevision(ifMatch);
    await this.getSavedSearch(p, id);
    const set: Partial<SavedSearchDoc> = { updatedAt: new Date() };
    if (input.name !== undefined && input.name !== null) set.name = input.name;
    if (input.filter !== undefined && input.filter !== null) set.filter = checkFilter(input.filter);
    if (set.name !== undefined) checkName(set.name);
    let doc: SavedSearchDoc | null;
    try {
      doc = await this.m.SavedSearch.findOneAndUpdate({ _id: id, revision }, { $set: set, $inc: { revision: 1 } }, { new: true })
        .lean<SavedSearchDoc>()
        .exec();
    } catch (e) {
      if (isDuplicateKey(e)) throw duplicateName('saved_search');
      throw e;
    }
    if (doc) return doc;
    throw revisionStale((await this.getSavedSearch(p, id)).revision);
  }

  async deleteSavedSearch(p: Principal | null, id: string, ifMatch: string | null | undefined): Promise<SavedSearchDoc> {
    this.assets.writer(p);
    const revision = requiredRevision(ifMatch);
    const current = await this.getSavedSearch(p, id);
    const res = await this.m.SavedSearch.deleteOne({ _id: id, revision });
    if (res.deletedCount !== 1) throw revisionStale((await this.getSavedSearch(p, id)).revision);
    return current;
  }

  /** Runs a saved search: its filter object through the assets list (same filters, sort, cursor). */
  async runSavedSearch(p: Principal | null, id: string, cursor?: string | null, limit?: number | null) {
    const s = await this.getSavedSearch(p, id);
    const filter: ListFilter = {};
    for (const [k, field] of Object.entries(SEARCH_FILTER_FIELDS)) {
      const v = s.filter[k];
      if (typeof v === 'string') filter[field] = v;
    }
    return this.assets.list(p, {
      filter,
      sort: (s.filter.sort as SortKey | undefined) ?? undefined,
      direction: (s.filter.direction as 'asc' | 'desc' | undefined) ?? undefined,
      cursor: cursor || undefined,
      limit: limit ?? undefined,
    });
  }
}
