import { z } from 'zod';
import { queryInt } from '../../../core/query-int';
import { type AnyRoute, route } from '../../../core/rest-route';
import { COLLECTION_MAX_ASSETS, ORG_LIST_LIMIT_MAX, SEARCH_FILTER_FIELDS } from './service';
import { revisionHeader } from '../revisions';
import { SORT_FIELDS } from '../storage';
import { SCOPES } from '../records';

/** Spec 4.3 `/collections` and `/saved-searches` (item routes `/{id}`, docs/contracts.md, names inside the areas). */
const P = '/api/v1/assets';
const tag = 'Assets';
const str = z.string();
const pageQuery = z.object({ limit: queryInt(1, ORG_LIST_LIMIT_MAX).optional(), cursor: str.optional() }).strict();
// Trimmed by the service: at least one character that is not white space.
const name = str.trim().min(1).max(128).regex(/\S/);

const collectionBody = z
  .object({
    name,
    description: str.max(1024).nullable().optional(),
    asset_ids: z.array(str.min(1).max(64)).max(COLLECTION_MAX_ASSETS).optional(),
  })
  .strict();

/** A saved search's filter object: the list route's filters plus `sort` and `direction`. */
const filterObject = z
  .object({
    ...Object.fromEntries(Object.keys(SEARCH_FILTER_FIELDS).map((k) => [k, str.max(1024).optional()])),
    sort: z.enum(Object.keys(SORT_FIELDS) as [keyof typeof SORT_FIELDS]).optional(),
    direction: z.enum(['asc', 'desc']).optional(),
  })
  .strict();
const savedSearchBody = z.object({ name, filter: filterObject }).strict();
const runQuery = z.object({ limit: queryInt(1, 200).optional(), cursor: str.optional() }).strict();

export const collectionRoutes: AnyRoute[] = [
  route({
    method: 'GET',
    path: `${P}/collections`,
    summary: 'List collections (newest first)',
    tag,
    operation: 'list-collections',
    query: pageQuery,
    scope: SCOPES.read,
    derive: { query: '.' },
    select: (d) => d.assetCollections,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/collections`,
    summary: 'Create a collection of asset ids',
    tag,
    operation: 'create-collection',
    body: collectionBody,
    scope: SCOPES.write,
    errors: [404, 409],
    creates: { collectionID: '/data/id' },
    derive: { body: 'input' },
    select: (d) => d.createAssetCollection,
    headers: revisionHeader,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/collections/{collectionID}`,
    summary: 'One collection (revision also as ETag)',
    tag,
    operation: 'get-collection',
    scope: SCOPES.read,
    derive: { params: 'id' },
    select: (d) => d.assetCollection,
    headers: revisionHeader,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'PUT',
    path: `${P}/collections/{collectionID}`,
    summary: 'Replace the name, description or asset ids sent; needs If-Match',
    tag,
    operation: 'update-collection',
    body: collectionBody.partial().strict(),
    scope: SCOPES.write,
    errors: [409, 412, 428],
    derive: { body: 'input', params: 'id', headers: ['If-Match'] },
    select: (d) => d.updateAssetCollection,
    headers: revisionHeader,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'DELETE',
    path: `${P}/collections/{collectionID}`,
    summary: 'Delete a collection (the assets stay); needs If-Match',
    tag,
    operation: 'delete-collection',
    scope: SCOPES.write,
    errors: [412, 428],
    derive: { params: 'id', headers: ['If-Match'] },
    select: (d) => d.deleteAssetCollection,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/saved-searches`,
    summary: 'List saved searches (newest first)',
    tag,
    operation: 'list-saved-searches',
    query: pageQuery,
    scope: SCOPES.read,
    derive: { query: '.' },
    select: (d) => d.assetSavedSearches,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/saved-searches`,
    summary: 'Save a filter object of the assets list',
    tag,
    operation: 'create-saved-search',
    body: savedSearchBody,
    scope: SCOPES.write,
    errors: [409],
    creates: { savedSearchID: '/data/id' },
    derive: { body: 'input' },
    select: (d) => d.createAssetSavedSearch,
    headers: revisionHeader,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/saved-searches/{savedSearchID}`,
    summary: 'One saved search (revision also as ETag)',
    tag,
    operation: 'get-saved-search',
    scope: SCOPES.read,
    derive: { params: 'id' },
    select: (d) => d.assetSavedSearch,
    headers: revisionHeader,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/saved-searches/{savedSearchID}/assets`,
    summary: 'Run a saved search: the assets list with its filter object (same answer shape and cursor)',
    tag,
    operation: 'run-saved-search',
    query: runQuery,
    scope: SCOPES.read,
    derive: { query: '.', params: 'id' },
    select: (d) => d.assetSavedSearchResults,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'PUT',
    path: `${P}/saved-searches/{savedSearchID}`,
    summary: 'Replace the name or filter object sent; needs If-Match',
    tag,
    operation: 'update-saved-search',
    body: savedSearchBody.partial().strict(),
    scope: SCOPES.write,
    errors: [409, 412, 428],
    derive: { body: 'input', params: 'id', headers: ['If-Match'] },
    select: (d) => d.updateAssetSavedSearch,
    headers: revisionHeader,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'DELETE',
    path: `${P}/saved-searches/{savedSearchID}`,
    summary: 'Delete a saved search; needs If-Match',
    tag,
    operation: 'delete-saved-search',
    scope: SCOPES.write,
    errors: [412, 428],
    derive: { params: 'id', headers: ['If-Match'] },
    select: (d) => d.deleteAssetSavedSearch,
    status: 200,
    envelope: 'standard',
  }),
];
