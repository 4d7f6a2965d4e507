import { z } from 'zod';
import { queryInt } from '../../core/query-int';
import { OBJECT_EVENT_TYPES } from '../../core/events/object-events';
import { type AnyRoute, route } from '../../core/rest-route';
import { HISTORY_PAGE_MAX, PULL_BATCH_MAX } from './settings';
import { MAX_FILTER_LENGTH } from './subscriptions';

const PREFIX = '/api/v1/buckets/{bucketID}';
const tag = 'Object-store events';
const envelope = 'standard' as const;

const createBody = z
  .object({
    delivery_mode: z.enum(['pull', 'push']).optional(),
    url: z.string().min(1).max(2048).optional(),
    event_types: z.array(z.enum(OBJECT_EVENT_TYPES)).min(1).max(OBJECT_EVENT_TYPES.length).optional(),
    prefix: z.string().max(MAX_FILTER_LENGTH).nullable().optional(),
    suffix: z.string().max(MAX_FILTER_LENGTH).nullable().optional(),
    enabled: z.boolean().optional(),
  })
  .strict();

const updateBody = z.object({ enabled: z.boolean().optional(), rotate_secret: z.boolean().optional() }).strict();
const ackBody = z.object({ claim_id: z.string().min(1).max(200).optional(), retry: z.boolean().optional() }).strict();
const pullQuery = z.object({ limit: queryInt(1, PULL_BATCH_MAX).optional() }).strict();
const historyQuery = z
  .object({ limit: queryInt(1, HISTORY_PAGE_MAX).optional(), cursor: z.string().max(2000).optional() })
  .strict();

/** Spec 4.5 (prefix `/api/v1/buckets/{bucketID}`), plus list and read of subscriptions. */
export const objstoreRoutes: AnyRoute[] = [
  route({
    method: 'POST',
    path: `${PREFIX}/event-subscriptions`,
    summary: 'Create an event subscription (pull by default); a push subscription answers its signing secret once',
    tag,
    operation: 'create-event-subscription',
    scope: 'assets:write',
    body: createBody,
    // The input's fields are the body's keys in camelCase (decision 0295).
    derive: { body: 'input', params: '.' },
    select: (d) => d.objstoreCreateEventSubscription,
    status: 201,
    envelope,
  }),
  route({
    method: 'GET',
    path: `${PREFIX}/event-subscriptions`,
    summary: "The bucket's event subscriptions",
    tag,
    operation: 'event-subscriptions',
    scope: 'assets:read',
    derive: { params: '.' },
    select: (d) => ({ items: d.objstoreEventSubscriptions, next_cursor: '' }),
    status: 200,
    envelope,
  }),
  route({
    method: 'GET',
    path: `${PREFIX}/event-subscriptions/{subscriptionID}`,
    summary: 'One event subscription',
    tag,
    operation: 'event-subscription',
    scope: 'assets:read',
    derive: { params: '.' },
    select: (d) => d.objstoreEventSubscription,
    status: 200,
    envelope,
  }),
  route({
    method: 'PATCH',
    path: `${PREFIX}/event-subscriptions/{subscriptionID}`,
    summary: 'Pause or resume (`enabled`), or rotate the signing secret (`rotate_secret: true` answers the new one once)',
    tag,
    operation: 'update-event-subscription',
    scope: 'assets:write',
    body: updateBody,
    derive: { body: 'input', params: '.' },
    select: (d) => d.objstoreUpdateEventSubscription,
    status: 200,
    envelope,
  }),
  route({
    method: 'DELETE',
    path: `${PREFIX}/event-subscriptions/{subscriptionID}`,
    summary: 'Remove the subscription, its pending deliveries and its history (objects stay)',
    tag,
    operation: 'delete-event-subscription',
    scope: 'assets:write',
    derive: { params: '.' },
    select: (d) => d.objstoreDeleteEventSubscription,
    status: 200,
    envelope,
  }),
  route({
    method: 'GET',
    path: `${PREFIX}/event-subscriptions/{subscriptionID}/deliveries`,
    summary: 'Pull a batch: each entry is claimed for 15 minutes and carries its claim_id',
    tag,
    operation: 'pull-deliveries',
    // A pull claims (changes the queue): a write, like the ack (decision 0099).
    scope: 'assets:write',
    query: pullQuery,
    derive: { query: '.', params: '.' },
    select: (d) => d.objstorePullDeliveries,
    status: 200,
    envelope,
  }),
  route({
    method: 'POST',
    path: `${PREFIX}/event-deliveries/{deliveryID}/ack`,
    summary: 'Acknowledge a pulled delivery: retry false completes it, retry true makes it available again',
    tag,
    operation: 'ack-delivery',
    scope: 'assets:write',
    body: ackBody,
    derive: { body: '.', params: '.' },
    select: (d) => d.objstoreAckDelivery,
    status: 200,
    envelope,
  }),
  route({
    method: 'GET',
    path: `${PREFIX}/event-subscriptions/{subscriptionID}/history`,
    summary: 'Deliveries with their attempts, newest first, up to 50 a page; next_cursor for older ones',
    tag,
    operation: 'delivery-history',
    scope: 'assets:read',
    query: historyQuery,
    derive: { query: '.', params: '.' },
    select: (d) => d.objstoreDeliveryHistory,
    status: 200,
    envelope,
  }),
  route({
    method: 'POST',
    path: `${PREFIX}/event-deliveries/{deliveryID}/replay`,
    summary: 'Requeue a delivered or exhausted push delivery with the same event id',
    tag,
    operation: 'replay-delivery',
    scope: 'assets:write',
    derive: { params: '.' },
    select: (d) => d.objstoreReplayDelivery,
    status: 202,
    envelope,
  }),
];
