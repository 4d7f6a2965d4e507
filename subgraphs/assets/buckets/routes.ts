import { z } from 'zod';
import { type AnyRoute, route } from '../../../core/rest-route';
import { P, str, tag, SCOPES } from '../records';
import { revisionHeader } from '../revisions';
import { bucketBody } from './body';

const policyBody = z
  .object({
    allowed_mime_types: z.array(str.min(1).max(127)).max(200).nullable().optional(),
    max_image_bytes: z.number().int().positive().optional(),
    max_video_bytes: z.number().int().positive().optional(),
    max_other_bytes: z.number().int().positive().optional(),
    require_scan: z.boolean().optional(),
  })
  .strict();

/** Spec 4.3 buckets (guarded by their revision) and the account's upload policy. */
export const bucketRoutes: AnyRoute[] = [
  route({
    method: 'GET',
    path: `${P}/buckets`,
    summary: 'List buckets',
    tag,
    operation: 'list-buckets',
    scope: SCOPES.read,
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
    derive: { body: 'input' },
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
    derive: { body: 'input', params: 'id', headers: ['If-Match'] },
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
    derive: { params: 'id', headers: ['If-Match'] },
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
    derive: { body: 'input' },
    select: (d) => d.putAssetContentPolicy,
    status: 200,
    envelope: 'standard',
  }),
];
