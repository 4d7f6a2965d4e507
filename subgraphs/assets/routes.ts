import { z } from 'zod';
import { queryInt } from '../../core/query-int';
import { type AnyRoute, route } from '../../core/rest-route';
import { VISIBILITIES } from './model';
import { revisionHeader } from './revisions';
import { CAPABILITY_MAX_SECONDS } from './capabilities';
import { BRANCH_RE, SCOPES, SORT_FIELDS } from './service';
import { FITS, FORMATS, GRAVITIES, MAX_EDGE, NAME as TRANSFORMATION_NAME } from './transforms';
import { HEADER_SAFE, MAX_CACHE_CONTROL_LENGTH, ORIGINAL_NAME } from './asset-fields';
import { MAX_KEY_LENGTH } from './uploads';
import { workflowRoutes } from './workflows/routes';

/**
 * Spec 4.3 JSON routes (the byte routes — upload, replace, CDN — are the data plane). Each row is
 * one GraphQL operation in `operations/`; the scope is the narrowest that does the job.
 */
const P = '/api/v1/assets';
const tag = 'Assets';
const str = z.string();
/** A Cache-Control value as the domain takes it (asset-fields.ts): 1 to 256 visible ASCII characters. */
/** The key rules of asset-fields.ts, in words (a rule across segments that a JSON Schema pattern does not state simply). */
const KEY_RULE = 'no `.` or `..` path segments, no backslash, no leading `/`, no control characters';
const cacheControlText = str.min(1).max(MAX_CACHE_CONTROL_LENGTH).regex(HEADER_SAFE, 'visible ASCII characters and spaces');
const id = (r: { params: Record<string, string> }) => r.params.assetID;
const ifMatch = (r: { headers: Record<string, string | string[] | undefined> }) => {
  const h = r.headers['if-match'];
  return (Array.isArray(h) ? h[0] : h) ?? null;
};
/**
 * `/jobs/{jobID}` answers any kind of job as its own route does (the kind's fields at the top, so
 * a client polling `status_url` reads `result`, `counts` or `steps` where it always did), plus the
 * common `kind`, `status_url` (this route) and `detail_url` (the kind's own route).
 */
const JOB_DETAILS = ['bulk', 'ai', 'migration', 'workflow_run'] as const;
function jobView(job: unknown): unknown {
  if (!job || typeof job !== 'object') return job;
  const common: Record<string, unknown> = { ...(job as Record<string, unknown>) };
  let detail: Record<string, unknown> = {};
  for (const k of JOB_DETAILS) {
    if (common[k] && typeof common[k] === 'object') detail = common[k] as Record<string, unknown>;
    delete common[k];
  }
  return { ...common, ...detail, status_url: common.status_url };
}

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

const bucketBody = z
  .object({
    name: str
      .min(1)
      .max(63)
      .regex(/^[a-z0-9][a-z0-9._-]*$/i, 'letters, digits, . _ -'),
    default_visibility: z.enum(VISIBILITIES).optional(),
    cache_control: cacheControlText.optional(),
    versioning: z.boolean().optional(),
    retention_days: z.number().int().min(0).nullable().optional(),
    max_bytes: z.number().int().positive().nullable().optional(),
    allowed_mime_types: z.array(str.min(1).max(127)).max(100).nullable().optional(),
    allowed_origins: z.array(str.min(1).max(255)).max(100).optional(),
    home_region: str.min(1).max(63).optional(),
    replication_policy: z
      .object({ regions: z.array(str.min(1).max(63)).max(10) })
      .strict()
      .optional(),
    lifecycle_policy: z.record(z.unknown()).nullable().optional(),
    domain: str.min(1).max(253).nullable().optional(),
  })
  .strict();
type BucketBody = z.infer<typeof bucketBody>;
const bucketInput = (b: Partial<BucketBody>) => ({
  name: b.name,
  defaultVisibility: b.default_visibility,
  cacheControl: b.cache_control,
  versioning: b.versioning,
  retentionDays: b.retention_days,
  maxBytes: b.max_bytes,
  allowedMimeTypes: b.allowed_mime_types,
  allowedOrigins: b.allowed_origins,
  homeRegion: b.home_region,
  replicationPolicy: b.replication_policy,
  lifecyclePolicy: b.lifecycle_policy,
  domain: b.domain,
});

const policyBody = z
  .object({
    allowed_mime_types: z.array(str.min(1).max(127)).max(200).nullable().optional(),
    max_image_bytes: z.number().int().positive().optional(),
    max_video_bytes: z.number().int().positive().optional(),
    max_other_bytes: z.number().int().positive().optional(),
    require_scan: z.boolean().optional(),
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
/** Spec "not shown" shapes: docs/contracts.md (legacy flat form, typed v2 form with an eager policy). */
const edge = z.number().int().min(1).max(MAX_EDGE).nullable().optional();
const fit = z.enum(FITS).optional();
const gravity = z.enum(GRAVITIES).optional();
const format = z.enum(FORMATS).optional();
const quality = z.number().int().min(1).max(100).optional();
const legacyTransformation = z
  .object({
    name: str.regex(TRANSFORMATION_NAME),
    width: edge,
    height: edge,
    fit,
    gravity,
    format,
    quality,
  })
  .strict();
const typedTransformation = z
  .object({
    name: str.regex(TRANSFORMATION_NAME),
    version: z.literal(2),
    definition: z
      .object({
        operations: z.array(z.object({ type: z.literal('resize'), width: edge, height: edge, fit, gravity }).strict()).max(4),
        format,
        quality,
      })
      .strict(),
    eager: z.object({ enabled: z.boolean() }).strict().optional(),
  })
  .strict();
const transformationBody = z.union([typedTransformation, legacyTransformation]);
type TransformationBody = z.infer<typeof transformationBody>;
const transformationVars = (b: TransformationBody) =>
  'version' in b
    ? { name: b.name, version: 2, definition: b.definition, eager: b.eager?.enabled ?? false }
    : {
        name: b.name,
        version: 1,
        definition: {
          operations:
            b.width || b.height ? [{ type: 'resize', width: b.width, height: b.height, fit: b.fit, gravity: b.gravity }] : [],
          format: b.format,
          quality: b.quality,
        },
        eager: false,
      };
const transformBody = z
  .object({
    transformation: str.min(1).max(64).optional(),
    definition: typedTransformation.shape.definition.optional(),
  })
  .strict();
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

const sessionShared = {
  bucket: str.min(1).optional(),
  key: str.min(1).max(MAX_KEY_LENGTH).optional(),
  folder: str.max(MAX_KEY_LENGTH).optional(),
  visibility: z.enum(VISIBILITIES).optional(),
  metadata: z.record(z.unknown()).optional(),
};
const sessionBody = z
  .object({
    mode: z.enum(['chunked', 'single']).optional(),
    file_name: str.min(1).max(255),
    file_size: z.number().int().min(0),
    mime_type: str.max(127).optional(),
    checksum_sha256: str.regex(/^[0-9a-fA-F]{64}$/).optional(),
    part_size: z.number().int().positive().optional(),
    cache_control: cacheControlText.optional(),
    ...sessionShared,
  })
  .strict();
/** The legacy alias takes the same body with camelCase names as well (spec 9.5). */
const legacySessionBody = z
  .object({
    mode: z.enum(['chunked', 'single']).optional(),
    file_name: str.min(1).max(255).optional(),
    fileName: str.min(1).max(255).optional(),
    file_size: z.number().int().min(0).optional(),
    fileSize: z.number().int().min(0).optional(),
    mime_type: str.max(127).optional(),
    mimeType: str.max(127).optional(),
    checksum_sha256: str.regex(/^[0-9a-fA-F]{64}$/).optional(),
    checksumSha256: str.regex(/^[0-9a-fA-F]{64}$/).optional(),
    part_size: z.number().int().positive().optional(),
    partSize: z.number().int().positive().optional(),
    cache_control: cacheControlText.optional(),
    cacheControl: str.min(1).max(256).optional(),
    ...sessionShared,
  })
  .strict()
  .refine((b) => (b.file_name ?? b.fileName) !== undefined && (b.file_size ?? b.fileSize) !== undefined, {
    message: 'file_name and file_size are required',
  });
const idempotencyKey = (r: { headers: Record<string, string | string[] | undefined> }) => {
  const h = r.headers['idempotency-key'];
  return (Array.isArray(h) ? h[0] : h) || null;
};

const capabilityBody = z
  .object({
    bucket: str.min(1).optional(),
    folder: str.max(MAX_KEY_LENGTH).optional(),
    expires_in: z.number().int().min(1).max(CAPABILITY_MAX_SECONDS).optional(),
  })
  .strict();

export const assetsRoutes: AnyRoute[] = [
  route({
    method: 'POST',
    path: `${P}/upload-capabilities`,
    summary: 'One short-lived capability token for browser uploads at {base_url}/assets/widget',
    tag,
    operation: 'create-upload-capability',
    body: capabilityBody,
    scope: SCOPES.write,
    // 404: the bucket named is not one of the account's.
    errors: [404],
    variables: (r) => ({ bucket: r.body.bucket ?? null, folder: r.body.folder ?? null, expiresIn: r.body.expires_in ?? null }),
    select: (d) => d.createAssetUploadCapability,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/upload-sessions`,
    summary: 'Create an upload session (single signed PUT, or chunked); send Idempotency-Key',
    tag,
    operation: 'create-upload-session',
    body: sessionBody,
    scope: SCOPES.write,
    // 402: the session reserves its file_size of the account's quota at creation (decision 0098).
    errors: [402],
    variables: (r) => ({
      idempotencyKey: idempotencyKey(r),
      input: {
        mode: r.body.mode,
        fileName: r.body.file_name,
        fileSize: r.body.file_size,
        mimeType: r.body.mime_type,
        checksumSha256: r.body.checksum_sha256,
        partSize: r.body.part_size,
        bucket: r.body.bucket,
        key: r.body.key,
        folder: r.body.folder,
        visibility: r.body.visibility,
        cacheControl: r.body.cache_control,
        metadata: r.body.metadata,
      },
    }),
    select: (d) => d.createAssetUploadSession,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/upload-url`,
    summary: 'Legacy alias of POST /upload-sessions (accepts camelCase names)',
    tag,
    operation: 'create-upload-session',
    body: legacySessionBody,
    scope: SCOPES.write,
    errors: [402],
    variables: (r) => ({
      idempotencyKey: idempotencyKey(r),
      input: {
        mode: r.body.mode,
        fileName: r.body.file_name ?? r.body.fileName,
        fileSize: r.body.file_size ?? r.body.fileSize,
        mimeType: r.body.mime_type ?? r.body.mimeType,
        checksumSha256: r.body.checksum_sha256 ?? r.body.checksumSha256,
        partSize: r.body.part_size ?? r.body.partSize,
        bucket: r.body.bucket,
        key: r.body.key,
        folder: r.body.folder,
        visibility: r.body.visibility,
        cacheControl: r.body.cache_control ?? r.body.cacheControl,
        metadata: r.body.metadata,
      },
    }),
    select: (d) => d.createAssetUploadSession,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/upload-sessions/{sessionID}`,
    summary: 'An upload session with its received parts',
    tag,
    operation: 'get-upload-session',
    scope: SCOPES.read,
    variables: (r) => ({ id: r.params.sessionID }),
    select: (d) => d.assetUploadSession,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'DELETE',
    path: `${P}/upload-sessions/{sessionID}`,
    summary: 'Cancel an upload session and remove its parts',
    tag,
    operation: 'cancel-upload-session',
    scope: SCOPES.write,
    variables: (r) => ({ id: r.params.sessionID }),
    select: (d) => d.cancelAssetUploadSession,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/upload-sessions/{sessionID}/complete`,
    summary: 'Complete a chunked session: assemble the parts and check the whole-file checksum',
    tag,
    operation: 'complete-upload-session',
    scope: SCOPES.write,
    variables: (r) => ({ id: r.params.sessionID }),
    select: (d) => d.completeAssetUploadSession,
    headers: revisionHeader,
    status: 201,
    envelope: 'standard',
  }),
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
  route({
    method: 'GET',
    path: `${P}/buckets`,
    summary: 'List buckets',
    tag,
    operation: 'list-buckets',
    scope: SCOPES.read,
    variables: () => ({}),
    select: (d) => d.assetBuckets,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/buckets`,
    summary: 'Create a bucket',
    tag,
    operation: 'create-bucket',
    body: bucketBody,
    scope: SCOPES.admin,
    // 409: a bucket with this name exists.
    errors: [409],
    variables: ({ body }) => ({ input: bucketInput(body) }),
    select: (d) => d.createAssetBucket,
    headers: revisionHeader,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'PUT',
    path: `${P}/buckets/{bucketID}`,
    summary: 'Update a bucket; needs If-Match with its revision',
    tag,
    operation: 'update-bucket',
    body: bucketBody.partial(),
    scope: SCOPES.admin,
    // 428 without If-Match, 412 when it names another revision (spec 7.3); 409 duplicate key, non-empty bucket or job in progress.
    errors: [409, 412, 428],
    variables: (r) => ({ id: r.params.bucketID, input: bucketInput(r.body), ifMatch: ifMatch(r) }),
    select: (d) => d.updateAssetBucket,
    headers: revisionHeader,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'DELETE',
    path: `${P}/buckets/{bucketID}`,
    summary: 'Delete an empty bucket; needs If-Match with its revision',
    tag,
    operation: 'delete-bucket',
    scope: SCOPES.admin,
    // 428 without If-Match, 412 when it names another revision (spec 7.3); 409 duplicate key, non-empty bucket or job in progress.
    errors: [409, 412, 428],
    variables: (r) => ({ id: r.params.bucketID, ifMatch: ifMatch(r) }),
    select: (d) => d.deleteAssetBucket,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/policy`,
    summary: 'Content policy',
    tag,
    operation: 'get-policy',
    scope: SCOPES.read,
    variables: () => ({}),
    select: (d) => d.assetContentPolicy,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'PUT',
    path: `${P}/policy`,
    summary: 'Replace the content policy (fields left out return to their defaults)',
    tag,
    operation: 'put-policy',
    body: policyBody,
    scope: SCOPES.admin,
    variables: ({ body: b }) => ({
      input: {
        allowedMimeTypes: b.allowed_mime_types,
        maxImageBytes: b.max_image_bytes,
        maxVideoBytes: b.max_video_bytes,
        maxOtherBytes: b.max_other_bytes,
        requireScan: b.require_scan,
      },
    }),
    select: (d) => d.putAssetContentPolicy,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/jobs/{jobID}`,
    summary: 'Poll a job',
    tag,
    operation: 'get-job',
    scope: SCOPES.read,
    variables: (r) => ({ id: r.params.jobID }),
    select: (d) => jobView(d.assetJob),
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/jobs/{jobID}/cancel`,
    summary: 'Cancel a job where its kind allows (delete: while queued; migration; workflow run); 409 otherwise',
    tag,
    operation: 'cancel-job',
    scope: SCOPES.write,
    errors: [409],
    variables: (r) => ({ id: r.params.jobID }),
    select: (d) => jobView(d.cancelAssetJob),
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/{assetID}`,
    summary: 'One asset (revision also as ETag)',
    tag,
    operation: 'get-asset',
    scope: SCOPES.read,
    variables: (r) => ({ id: id(r) }),
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
    variables: (r) => ({
      id: id(r),
      ifMatch: ifMatch(r),
      input: {
        bucket: r.body.bucket,
        key: r.body.key,
        originalName: r.body.original_name,
        cacheControl: r.body.cache_control,
        visibility: r.body.visibility,
      },
    }),
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
    variables: (r) => ({ id: id(r), ifMatch: ifMatch(r) }),
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
    variables: (r) => ({ id: id(r), tags: r.body.tags, ifMatch: ifMatch(r) }),
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
    variables: (r) => ({ id: id(r), metadata: r.body, ifMatch: ifMatch(r) }),
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
    variables: (r) => ({
      id: id(r),
      expiresIn: r.body.expires_in,
      maxDownloads: 'max_downloads' in r.body ? (r.body.max_downloads ?? null) : null,
      transformation: 'transformation' in r.body ? r.body.transformation : null,
    }),
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
    variables: (r) => ({ id: id(r) }),
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
    variables: (r) => ({ id: id(r) }),
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
    variables: (r) => ({ id: id(r), versionId: r.params.versionID, ifMatch: ifMatch(r) }),
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
    variables: (r) => ({ id: id(r), name: r.body.name, fromVersion: r.body.from_version ?? null }),
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
    variables: (r) => ({ id: id(r), branch: r.params.branch, ifMatch: ifMatch(r) }),
    select: (d) => d.promoteAssetBranch,
    headers: revisionHeader,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/transformations`,
    summary: 'Create a transformation (legacy flat fields, or typed v2 definition with an eager policy)',
    tag,
    operation: 'create-transformation',
    body: transformationBody,
    scope: SCOPES.write,
    // 409: a transformation with this name exists.
    errors: [409],
    variables: (r) => transformationVars(r.body),
    select: (d) => d.createAssetTransformation,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/transformations`,
    summary: 'List transformations',
    tag,
    operation: 'list-transformations',
    scope: SCOPES.read,
    variables: () => ({}),
    select: (d) => d.assetTransformations,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'DELETE',
    path: `${P}/transformations/{name}`,
    summary: 'Delete a transformation (its derivatives stay until the asset changes)',
    tag,
    operation: 'delete-transformation',
    scope: SCOPES.write,
    variables: (r) => ({ name: r.params.name }),
    select: (d) => d,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/{assetID}/transforms`,
    summary: 'Materialise a definition (by name) or an inline typed definition now',
    tag,
    operation: 'transform-asset',
    body: transformBody,
    scope: SCOPES.write,
    variables: (r) => ({ id: id(r), transformation: r.body.transformation ?? null, definition: r.body.definition ?? null }),
    select: (d) => d.transformAsset,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/{assetID}/derivatives`,
    summary: 'Persisted transformation outputs of the asset',
    tag,
    operation: 'asset-derivatives',
    scope: SCOPES.read,
    variables: (r) => ({ id: id(r) }),
    select: (d) => d.assetDerivatives,
    status: 200,
    envelope: 'standard',
  }),
  ...workflowRoutes,
];
