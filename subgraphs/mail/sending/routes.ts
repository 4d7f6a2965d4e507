import { z } from 'zod';
import { queryInt } from '../../../core/query-int';
import { type AnyRoute, route } from '../../../core/rest-route';
import { LIST_LIMIT_MAX } from './webhooks';

/** Spec 4.8 sending, events and webhook routes under `/v1/mail` (camelCase JSON). */
const tag = 'Mail sending and webhooks';
const V1 = '/v1/mail';
const address = z.string().min(3).max(400);
const list = z.array(address).max(50);

const sendBody = z
  .object({
    from: address,
    to: z.union([address, list.min(1)]),
    cc: list.optional(),
    bcc: list.optional(),
    subject: z.string().max(998),
    html: z.string().max(2_000_000).optional(),
    text: z.string().max(2_000_000).optional(),
    tags: z.array(z.string().min(1).max(100)).max(20).optional(),
    /** Assets ids (the spec's "attachments through Assets IDs"); checked by the sender. */
    attachments: z.array(z.string().min(1).max(100)).max(50).optional(),
  })
  .strict();
// Unknown types are the service's `invalid_event_types` (with the list of unknown ones).
const eventTypes = z.array(z.string().min(1).max(100)).min(1).max(60);
const webhookBody = z
  .object({ url: z.string().min(1).max(2048), eventTypes, description: z.string().max(500).optional() })
  .strict();
const webhookPatch = z
  .object({ url: z.string().min(1).max(2048).optional(), eventTypes: eventTypes.optional(), enabled: z.boolean().optional() })
  .strict();
const limit = queryInt(1, LIST_LIMIT_MAX).optional();
/** RFC 3339 times (the service reads them with `Date`; anything it cannot read is a 400). */
const time = z.string().datetime({ offset: true }).optional();
const eventsQuery = z
  .object({
    type: z.string().optional(),
    resourceType: z.string().optional(),
    resourceId: z.string().optional(),
    messageId: z.string().optional(),
    from: time,
    to: time,
    limit,
    cursor: z.string().optional(),
  })
  .strict();
const deliveriesQuery = z
  .object({ status: z.enum(['pending', 'succeeded', 'failed']).optional(), limit, cursor: z.string().optional() })
  .strict();

export const sendingRoutes: AnyRoute[] = [
  route({
    method: 'POST',
    path: `${V1}/send`,
    summary: 'Send a message from a verified sender (a test key records it without sending)',
    tag,
    operation: 'send-mail',
    body: sendBody,
    derive: { body: '.' },
    // One address or a list: the operation takes a list.
    variables: (r) => ({ to: Array.isArray(r.body.to) ? r.body.to : [r.body.to] }),
    select: (d) => d.sendMail,
    status: 202,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${V1}/events`,
    summary: 'Mail events of the account, newest first',
    tag,
    operation: 'mail-events',
    query: eventsQuery,
    derive: { query: '.' },
    select: (d) => d.mailEvents,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${V1}/messages/{id}/timeline`,
    summary: "A message's timeline, oldest first",
    tag,
    operation: 'mail-message-timeline',
    derive: { params: '.' },
    select: (d) => d.mailMessageTimeline,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${V1}/webhooks`,
    summary: 'Create a signed webhook endpoint; the secret is shown only here and on rotate',
    tag,
    operation: 'create-mail-webhook',
    body: webhookBody,
    derive: { body: '.' },
    select: (d) => d.createMailWebhook,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${V1}/webhooks`,
    summary: 'Webhook endpoints of the account (never a secret)',
    tag,
    operation: 'mail-webhooks',
    select: (d) => d.mailWebhooks,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'PATCH',
    path: `${V1}/webhooks/{webhookId}`,
    summary: 'Change the URL, event types or enabled state of an endpoint',
    tag,
    operation: 'update-mail-webhook',
    body: webhookPatch,
    derive: { body: '.', params: '.' },
    select: (d) => d.updateMailWebhook,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${V1}/webhooks/{webhookId}/rotate`,
    summary: 'Replace the signing secret; the new one is shown once',
    tag,
    operation: 'rotate-mail-webhook-secret',
    derive: { params: '.' },
    select: (d) => d.rotateMailWebhookSecret,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'DELETE',
    path: `${V1}/webhooks/{webhookId}`,
    summary: 'Delete an endpoint',
    tag,
    operation: 'delete-mail-webhook',
    derive: { params: '.' },
    select: (d) => d.deleteMailWebhook,
    status: 204,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${V1}/webhooks/{webhookId}/deliveries`,
    summary: "An endpoint's deliveries, newest first",
    tag,
    operation: 'mail-webhook-deliveries',
    query: deliveriesQuery,
    derive: { query: '.', params: '.' },
    select: (d) => d.mailWebhookDeliveries,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${V1}/webhook-deliveries/{deliveryId}`,
    summary: 'A delivery with every attempt',
    tag,
    operation: 'mail-webhook-delivery',
    derive: { params: '.' },
    select: (d) => d.mailWebhookDelivery,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${V1}/webhook-deliveries/{deliveryId}/retry`,
    summary: 'Deliver again now (same webhook-id and body)',
    tag,
    operation: 'retry-mail-webhook-delivery',
    derive: { params: '.' },
    select: (d) => d.retryMailWebhookDelivery,
    status: 202,
    envelope: 'standard',
  }),
];
