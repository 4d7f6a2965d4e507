import { z } from 'zod';
import { queryInt } from '../../../core/query-int';
import { camelKeys } from '../../../core/field-names';
import { type AnyRoute, route } from '../../../core/rest-route';
import { ACCESS_LOG_PAGE_MAX } from './analytics';
import { INVENTORY_FORMATS } from './model';
import { QUERY_MAX_ROWS } from './query';
import { SCOPES, ifMatch } from '../records';
import { revisionHeader } from '../revisions';
import { bucketBody } from '../buckets';

/**
 * Spec 4.3 object-store bucket routes (`/api/v1/assets/objstore-buckets`, `…/buckets/{id}/storage`,
 * `…/buckets/{id}/relocations`) and the bucket's other resources under `/api/v1/buckets/{bucketID}`
 * (paths the spec leaves open: docs/spec-decisions.md § Object-store bucket operations).
 */
const A = '/api/v1/assets';
const B = '/api/v1/buckets/{bucketID}';
const tag = 'Object-store buckets';
const str = z.string();
const region = str.min(1).max(63);
/** An RFC 3339 time (with an offset or `Z`). */
const rfc3339 = str.datetime({ offset: true });
/** An object key as uploads accept it. */
const objectKey = str.min(1).max(1024);

/** The object-store bucket's fields: those of the Assets bucket body (buckets/body.ts), one rule each. */
const objstoreBucketBody = bucketBody.pick({
  name: true,
  default_visibility: true,
  cache_control: true,
  versioning: true,
  retention_days: true,
  max_bytes: true,
  home_region: true,
  replication_policy: true,
});

const storageBody = z
  .object({
    /** The current bucket revision, when `If-Match` is not sent. */
    revision: z.number().int().positive().optional(),
  })
  .extend(
    bucketBody.pick({
      default_visibility: true,
      cache_control: true,
      versioning: true,
      retention_days: true,
      max_bytes: true,
      replication_policy: true,
    }).shape,
  )
  .strict();

const relocationBody = z.object({ region }).strict();

const websiteBody = z
  .object({
    enabled: z.boolean(),
    index_object: objectKey.optional(),
    error_object: objectKey.nullable().optional(),
  })
  .strict();

const analyticsQuery = z.object({ start: rfc3339.optional() }).strict();
const logsQuery = z
  .object({ limit: queryInt(1, ACCESS_LOG_PAGE_MAX).optional(), cursor: str.min(1).max(512).optional() })
  .strict();
const inventoryBody = z.object({ format: z.enum(INVENTORY_FORMATS), prefix: str.min(1).max(1024).optional() }).strict();
const queryBody = z
  .object({
    prefix: str.min(1).max(1024).optional(),
    suffix: str.min(1).max(1024).optional(),
    content_type: str.min(1).max(127).optional(),
    min_size: z.number().int().min(0).optional(),
    max_size: z.number().int().min(0).optional(),
    updated_after: rfc3339.optional(),
    limit: z.number().int().min(1).max(QUERY_MAX_ROWS).optional(),
  })
  .strict();

export const bucketOpsRoutes: AnyRoute[] = [
  route({
    method: 'GET',
    path: `${A}/objstore-buckets`,
    summary: 'Object-store buckets of the account',
    tag,
    operation: 'objstore-list-buckets',
    scope: SCOPES.read,
    select: (d) => d.objstoreBuckets,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${A}/objstore-buckets`,
    summary: 'Create an object-store bucket (an Assets bucket that is an event source)',
    tag,
    operation: 'objstore-create-bucket',
    body: objstoreBucketBody,
    scope: SCOPES.admin,
    errors: [409, 422],
    creates: { bucketID: '/data/id' },
    derive: { body: 'input' },
    select: (d) => d.createObjstoreBucket,
    headers: revisionHeader,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'PUT',
    path: `${A}/buckets/{bucketID}/storage`,
    summary: 'Storage settings of an object-store bucket; needs its current revision (If-Match or `revision`)',
    tag,
    operation: 'objstore-update-storage',
    body: storageBody,
    scope: SCOPES.admin,
    errors: [404, 412, 422, 428],
    derive: { params: '.' },
    variables: (r) => ({
      ifMatch: ifMatch(r) ?? (r.body.revision !== undefined ? String(r.body.revision) : null),
      input: camelKeys({ ...r.body, revision: undefined }),
    }),
    select: (d) => d.updateObjstoreBucketStorage,
    headers: revisionHeader,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${A}/buckets/{bucketID}/relocations`,
    summary: "Move the bucket's bytes to another region root (durable job; objects stay readable)",
    tag,
    operation: 'objstore-relocate-bucket',
    body: relocationBody,
    scope: SCOPES.admin,
    errors: [404, 409, 422],
    creates: { relocationID: '/data/id' },
    derive: { body: '.', params: '.' },
    select: (d) => d.relocateObjstoreBucket,
    status: 202,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${A}/buckets/{bucketID}/relocations/{relocationID}`,
    summary: 'A relocation: status and progress',
    tag,
    operation: 'objstore-get-relocation',
    scope: SCOPES.read,
    errors: [404],
    derive: { params: 'id' },
    select: (d) => d.objstoreBucketRelocation,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${B}/analytics`,
    summary: 'Stored bytes, object count, requests, errors, bandwidth, most active prefixes (default: previous 30 days)',
    tag,
    operation: 'objstore-bucket-analytics',
    query: analyticsQuery,
    scope: SCOPES.read,
    errors: [404, 422],
    derive: { query: '.', params: '.' },
    select: (d) => d.objstoreBucketAnalytics,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${B}/access-logs`,
    summary: 'Access log entries, newest first',
    tag,
    operation: 'objstore-access-logs',
    query: logsQuery,
    scope: SCOPES.read,
    errors: [404, 422],
    derive: { query: '.', params: '.' },
    select: (d) => d.objstoreBucketAccessLogs,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${B}/inventory-exports`,
    summary: 'Export the object list as CSV or JSONL (durable job; the file is downloadable)',
    tag,
    operation: 'objstore-create-inventory-export',
    body: inventoryBody,
    scope: SCOPES.write,
    errors: [404],
    creates: { exportID: '/data/id' },
    derive: { body: '.', params: '.' },
    select: (d) => d.createObjstoreInventoryExport,
    status: 202,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${B}/inventory-exports/{exportID}`,
    summary: 'An inventory export: status, row count, file address',
    tag,
    operation: 'objstore-get-inventory-export',
    scope: SCOPES.read,
    errors: [404],
    derive: { params: 'id' },
    select: (d) => d.objstoreInventoryExport,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${B}/query`,
    summary: 'Bounded query of the bucket objects (at most 1,000 rows)',
    tag,
    operation: 'objstore-bucket-query',
    body: queryBody,
    scope: SCOPES.read,
    errors: [404],
    derive: { body: 'input', params: '.' },
    select: (d) => d.objstoreBucketQuery,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${B}/website`,
    summary: 'Website settings (index and error object served on the CDN)',
    tag,
    operation: 'objstore-get-website',
    scope: SCOPES.read,
    errors: [404],
    derive: { params: '.' },
    select: (d) => d.objstoreBucketWebsite,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'PUT',
    path: `${B}/website`,
    summary: 'Turn website mode on (index and error object) or off',
    tag,
    operation: 'objstore-put-website',
    body: websiteBody,
    scope: SCOPES.admin,
    errors: [404],
    derive: { body: '.', params: '.' },
    select: (d) => d.putObjstoreBucketWebsite,
    status: 200,
    envelope: 'standard',
  }),
];
