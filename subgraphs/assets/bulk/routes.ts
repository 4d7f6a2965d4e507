import { z } from 'zod';
import { queryInt } from '../../../core/query-int';
import { type AnyRoute, route } from '../../../core/rest-route';
import { SCOPES } from '../records';
import { BULK_ACTIONS } from './model';
import { BULK_MAX_ITEMS, BULK_RESULTS_PAGE_MAX } from './service';

const P = '/api/v1/assets';
const tag = 'Assets';
const str = z.string();

/** One item per action (BULK_ACTIONS): `visibility` only with, and required by, action visibility; `tags` likewise with add_tags. */
const target = {
  asset_id: str.min(1).max(64),
  revision: z
    .number()
    .int()
    .positive()
    .max(2 ** 31 - 1),
};
const item = z.discriminatedUnion('action', [
  z.object({ ...target, action: z.literal(BULK_ACTIONS[0]) }).strict(),
  z.object({ ...target, action: z.literal(BULK_ACTIONS[1]), visibility: z.enum(['public', 'private']) }).strict(),
  z.object({ ...target, action: z.literal(BULK_ACTIONS[2]), tags: z.array(str.min(1).max(128)).min(1).max(100) }).strict(),
]);
const bulkBody = z.object({ items: z.array(item).min(1).max(BULK_MAX_ITEMS) }).strict();
/** A page of a bulk job's per-item results (here and at `/jobs/{id}`). */
export const resultsQuery = z.object({ limit: queryInt(1, BULK_RESULTS_PAGE_MAX).optional(), cursor: str.optional() }).strict();

/** Spec 4.3 `POST /bulk` (and where its job is polled, with per-item results). */
export const bulkRoutes: AnyRoute[] = [
  route({
    method: 'POST',
    path: `${P}/bulk`,
    summary: 'Revisioned items for delete, visibility or add_tags; 202 with a durable job',
    tag,
    operation: 'submit-bulk',
    body: bulkBody,
    // 10,000 items of about 120 bytes each.
    bodyLimit: 4 * 1024 * 1024,
    scope: SCOPES.write,
    creates: { bulkJobID: '/data/job_id' },
    variables: ({ body }) => ({
      items: body.items.map((i) => ({
        assetId: i.asset_id,
        revision: i.revision,
        action: i.action,
        visibility: 'visibility' in i ? i.visibility : null,
        tags: 'tags' in i ? i.tags : null,
      })),
    }),
    select: (d) => d.submitAssetBulk,
    status: 202,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/bulk/{bulkJobID}`,
    summary: "A bulk job: status, counts and one page of per-item results (412 for a stale item's revision)",
    tag,
    operation: 'get-bulk-job',
    query: resultsQuery,
    scope: SCOPES.read,
    derive: { query: '.', params: 'id' },
    select: (d) => d.assetBulkJob,
    status: 200,
    envelope: 'standard',
  }),
];
