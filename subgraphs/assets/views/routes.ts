import { z } from 'zod';
import { queryInt } from '../../../core/query-int';
import { type AnyRoute, route } from '../../../core/rest-route';
import { EVENTS_PAGE_MAX } from './audit';
import { SCOPES } from '../records';

const P = '/api/v1/assets';
const tag = 'Assets';
/** A UTC day; the service still refuses one that does not exist (2026-02-30) with 422. */
const day = z.string().regex(/^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/, 'YYYY-MM-DD');

const analyticsQuery = z.object({ from: day.optional(), to: day.optional() }).strict();
const eventsQuery = z
  .object({
    asset_id: z.string().min(1).max(64).optional(),
    direction: z.enum(['asc', 'desc']).optional(),
    limit: queryInt(1, EVENTS_PAGE_MAX).optional(),
    cursor: z.string().optional(),
  })
  .strict();

/** Spec 4.3 `/analytics`, `/summary`, `/events`. */
export const viewRoutes: AnyRoute[] = [
  route({
    method: 'GET',
    path: `${P}/analytics`,
    summary: 'Delivery, transform and AI usage per UTC day (default: the last 30 days)',
    tag,
    operation: 'asset-analytics',
    query: analyticsQuery,
    scope: SCOPES.read,
    errors: [422],
    derive: { query: '.' },
    select: (d) => d.assetAnalytics,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/summary`,
    summary: 'Totals grouped by type, status, visibility and bucket; duplicate groups by checksum',
    tag,
    operation: 'asset-summary',
    scope: SCOPES.read,
    select: (d) => d.assetSummary,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/events`,
    summary: 'The audit stream of asset changes, newest first, with a cursor',
    tag,
    operation: 'asset-events',
    query: eventsQuery,
    scope: SCOPES.read,
    errors: [422],
    derive: { query: '.' },
    select: (d) => d.assetEvents,
    status: 200,
    envelope: 'standard',
  }),
];
