import { z } from 'zod';
import { queryInt } from '../../../core/query-int';
import { type AnyRoute, route } from '../../../core/rest-route';
import { ASSET_WEBHOOK_EVENT_TYPES } from './events';
import { DELIVERIES_PAGE_MAX } from './service';
import { SCOPES } from '../records';

const P = '/api/v1/assets';
const tag = 'Assets';
const str = z.string();

const webhookBody = z
  .object({
    url: str.min(1).max(2048),
    event_types: z.array(z.enum(ASSET_WEBHOOK_EVENT_TYPES)).min(1).max(ASSET_WEBHOOK_EVENT_TYPES.length),
    description: str.max(512).nullable().optional(),
  })
  .strict();
const deliveriesQuery = z
  .object({
    status: z.enum(['pending', 'succeeded', 'failed']).optional(),
    limit: queryInt(1, DELIVERIES_PAGE_MAX).optional(),
    cursor: str.optional(),
  })
  .strict();

/** Spec 4.3 `/webhooks`, `/webhooks/{webhookID}/deliveries`, `/webhook-deliveries/{deliveryID}/retry`. */
export const webhookRoutes: AnyRoute[] = [
  route({
    method: 'POST',
    path: `${P}/webhooks`,
    summary: 'Create a webhook; the answer carries its signing secret, once',
    tag,
    operation: 'create-webhook',
    body: webhookBody,
    scope: SCOPES.admin,
    errors: [409],
    creates: { webhookID: '/data/id' },
    derive: { body: 'input' },
    select: (d) => d.createAssetWebhook,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/webhooks`,
    summary: 'List webhooks (never their secrets)',
    tag,
    operation: 'list-webhooks',
    scope: SCOPES.read,
    select: (d) => d.assetWebhooks,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'DELETE',
    path: `${P}/webhooks/{webhookID}`,
    summary: 'Delete a webhook and its delivery history',
    tag,
    operation: 'delete-webhook',
    scope: SCOPES.admin,
    derive: { params: 'id' },
    select: (d) => d.deleteAssetWebhook,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/webhooks/{webhookID}/deliveries`,
    summary: 'Deliveries of a webhook with their attempt history (newest first)',
    tag,
    operation: 'list-webhook-deliveries',
    query: deliveriesQuery,
    scope: SCOPES.read,
    derive: { query: '.', params: '.' },
    select: (d) => d.assetWebhookDeliveries,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/webhook-deliveries/{deliveryID}/retry`,
    summary: 'Queue another attempt of a delivery now (same event id and body)',
    tag,
    operation: 'retry-webhook-delivery',
    scope: SCOPES.admin,
    derive: { params: 'id' },
    select: (d) => d.retryAssetWebhookDelivery,
    status: 202,
    envelope: 'standard',
  }),
];
