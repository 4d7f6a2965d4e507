import { z } from 'zod';
import { queryInt } from '../../../core/query-int';
import { type AnyRoute, route } from '../../../core/rest-route';
import { bucketRoutes } from '../buckets';
import { cacheControlText, MAX_KEY_LENGTH, ORIGINAL_NAME, P, SCOPES, str, tag, VISIBILITIES } from '../records';
import { revisionHeader } from '../revisions';
import { transformRoutes } from '../transforms';
import { uploadRoutes } from '../uploads';
import { BRANCH_RE, SORT_FIELDS } from './service';

/** The key rules of asset-fields.ts, in words (a rule across segments that a JSON Schema pattern does not state simply). */
const KEY_RULE = 'no `.` or `..` path segments, no backslash, no leading `/`, no control characters';
const listQuery = z
  .object({
    bucket: str.optional(),
    prefix: str.optional(),
    visibility: str.optional(),
    query: str.optional(),
    tag: str.optional(),
    mime_type: str.optional(),
    type: str.optional(),
    folder: str.optional(),
    checksum: str.optional(),
    status: str.optional(),
    scan_status: str.optional(),
    replication_status: str.optional(),
    moderation_status: str.optional(),
    quarantine_status: str.optional(),
    sort: z.enum(Object.keys(SORT_FIELDS) as [keyof typeof SORT_FIELDS]).optional(),
    direction: z.enum(['asc', 'desc']).optional(),
    cursor: str.optional(),
    limit: queryInt(1, 200).optional(),
  })
  .strict();

const patchBody = z
  .object({
    bucket: str.min(1).optional(),
    key: str.min(1).max(MAX_KEY_LENGTH).describe(KEY_RULE).optional(),
    original_name: str.min(1).max(255).regex(ORIGINAL_NAME, 'at least one visible character, no control characters').optional(),
    cache_control: cacheControlText.optional(),
    visibility: z.enum(VISIBILITIES).optional(),
  })
  .strict();

const tagsBody = z.object({ tags: z.array(str.min(1).max(128)).max(100) }).strict();
const metadataBody = z.record(z.unknown());
/** Up to ASSETS_SIGNED_URL_MAX_SECONDS (default 7 days); a transformation address counts no downloads. */
const expiresIn = z
  .number()
  .int()
  .min(1)
  .max(7 * 24 * 3600);
const signedUrlBody = z.union([
  z
    .object({
      expires_in: expiresIn,
      max_downloads: z
        .number()
        .int()
        .positive()
        .max(2 ** 31 - 1)
        .nullable()
        .optional(),
    })
    .strict(),
  z.object({ expires_in: expiresIn, transformation: str.min(1).max(64) }).strict(),
]);
const branchBody = z
  .object({
    name: str.regex(BRANCH_RE),
    from_version: z
      .number()
      .int()
      .positive()
      .max(2 ** 31 - 1)
      .optional(),
  })
  .strict();

/**
 * Spec 4.3 JSON routes (the byte routes — upload, replace, CDN — are the data plane). Each row is
 * one GraphQL operation in `operations/`; the scope is the narrowest that does the job. Uploads,
 * buckets and transformations keep their rows in their own files beside this one; the order of
 * this list is the order of the OpenAPI document.
 */
export const assetsRoutes: AnyRoute[] = [
  ...uploadRoutes,
  route({
    method: 'GET',
    path: P,
    summary: 'List assets: filters, sort and direction, total and an opaque cursor bound to the sort',
    tag,
    operation: 'list-assets',
    query: listQuery,
    scope: SCOPES.read,
    variables: ({ query: q }) => ({
      filter: {
        bucket: q.bucket,
        prefix: q.prefix,
        visibility: q.visibility,
        query: q.query,
        tag: q.tag,
        mimeType: q.mime_type,
        type: q.type,
        folder: q.folder,
        checksum: q.checksum,
        status: q.status,
        scanStatus: q.scan_status,
        replicationStatus: q.replication_status,
        moderationStatus: q.moderation_status,
        quarantineStatus: q.quarantine_status,
      },
      sort: q.sort,
      direction: q.direction,
      cursor: q.cursor,
      limit: q.limit,
    }),
    select: (d) => d.assets,
    status: 200,
    envelope: 'standard',
  }),
  ...bucketRoutes,
  route({
    method: 'GET',
    path: `${P}/{assetID}`,
    summary: 'One asset (revision also as ETag)',
    tag,
    operation: 'get-asset',
    scope: SCOPES.read,
    derive: { params: 'id' },
    select: (d) => d.asset,
    headers: revisionHeader,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'PATCH',
    path: `${P}/{assetID}`,
    summary: 'Change bucket, key, original name, cache control or visibility; needs If-Match',
    tag,
    operation: 'patch-asset',
    body: patchBody,
    scope: SCOPES.write,
    // 428 without If-Match, 412 when it names another revision (spec 7.3); 409 duplicate key, non-empty bucket or job in progress.
    errors: [409, 412, 428],
    derive: { body: 'input', params: 'id', headers: ['If-Match'] },
    select: (d) => d.patchAsset,
    headers: revisionHeader,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'DELETE',
    path: `${P}/{assetID}`,
    summary: 'Revision-checked asynchronous delete; 202 with a job',
    tag,
    operation: 'delete-asset',
    scope: SCOPES.write,
    // 428 without If-Match, 412 when it names another revision (spec 7.3); 409 duplicate key, non-empty bucket or job in progress.
    errors: [409, 412, 428],
    derive: { params: 'id', headers: ['If-Match'] },
    select: (d) => d.deleteAsset,
    status: 202,
    envelope: 'standard',
  }),
  route({
    method: 'PUT',
    path: `${P}/{assetID}/tags`,
    summary: 'Replace the tag set',
    tag,
    operation: 'set-asset-tags',
    body: tagsBody,
    scope: SCOPES.write,
    // 428 without If-Match, 412 when it names another revision (spec 7.3).
    errors: [412, 428],
    derive: { body: '.', params: 'id', headers: ['If-Match'] },
    select: (d) => d.setAssetTags,
    headers: revisionHeader,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'PATCH',
    path: `${P}/{assetID}/metadata`,
    summary: 'Merge the supplied JSON keys into the metadata (null removes a key)',
    tag,
    operation: 'merge-asset-metadata',
    body: metadataBody,
    scope: SCOPES.write,
    // 428 without If-Match, 412 when it names another revision (spec 7.3).
    errors: [412, 428],
    // The metadata's keys are the caller's: passed whole, not renamed.
    derive: { bodyAsSent: 'metadata', params: 'id', headers: ['If-Match'] },
    select: (d) => d.mergeAssetMetadata,
    headers: revisionHeader,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/{assetID}/signed-url`,
    summary: 'A private download URL: expires_in seconds, optional max_downloads',
    tag,
    operation: 'create-signed-url',
    body: signedUrlBody,
    scope: SCOPES.publish,
    // An absent `max_downloads` and an explicit null both mean no cap (the service reads them alike).
    derive: { body: '.', params: 'id' },
    select: (d) => d.createAssetSignedUrl,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/{assetID}/purge`,
    summary: 'Request CDN cache invalidation',
    tag,
    operation: 'purge-asset',
    scope: SCOPES.publish,
    derive: { params: 'id' },
    select: (d) => d.purgeAsset,
    status: 202,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/{assetID}/versions`,
    summary: 'Version history and branches',
    tag,
    operation: 'asset-versions',
    scope: SCOPES.read,
    derive: { params: 'id' },
    select: (d) => d.assetVersions,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/{assetID}/versions/{versionID}/restore`,
    summary: 'Make a copy of a version the current one',
    tag,
    operation: 'restore-version',
    scope: SCOPES.write,
    // 428 without If-Match, 412 when it names another revision (spec 7.3).
    errors: [412, 428],
    // The asset, the first path parameter, is the operation's `id`.
    derive: { params: { assetID: 'id' }, headers: ['If-Match'] },
    select: (d) => d.restoreAssetVersion,
    headers: revisionHeader,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/{assetID}/branches`,
    summary: 'Create a branch at a version (default: the current one)',
    tag,
    operation: 'create-branch',
    body: branchBody,
    scope: SCOPES.write,
    // 409: the branch exists (main always does).
    errors: [409],
    derive: { body: '.', params: 'id' },
    select: (d) => d.createAssetBranch,
    headers: revisionHeader,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/{assetID}/branches/{branch}/promote`,
    summary: "Make the branch's version the current one",
    tag,
    operation: 'promote-branch',
    scope: SCOPES.write,
    // 428 without If-Match, 412 when it names another revision (spec 7.3).
    errors: [412, 428],
    // The asset, the first path parameter, is the operation's `id`.
    derive: { params: { assetID: 'id' }, headers: ['If-Match'] },
    select: (d) => d.promoteAssetBranch,
    headers: revisionHeader,
    status: 200,
    envelope: 'standard',
  }),
  ...transformRoutes,
];
