import { z } from 'zod';
import { CURSOR_PATTERN } from '../../core/cursors';
import { queryInt } from '../../core/query-int';
import { type AnyRoute, route } from '../../core/rest-route';
import { DEFAULT_RELEASE_MEMORY_MB } from '../../dataplane/workerd';
import {
  COMMERCE_BODY_LIMIT,
  COMMERCE_PREFIX,
  DEFAULT_MEMORY_MAX_MB,
  ENVIRONMENTS,
  MAX_FIELD_LENGTH,
  MAX_SECRET_LENGTH,
  MAX_PAGE,
  MIN_RELEASE_MEMORY_MB,
} from './limits';

/**
 * Spec 4.2: every commerce route, each onto one GraphQL operation, with the commerce envelope and
 * the 64 KiB body limit of spec 8. Bodies are strict here (unknown top-level fields are refused by
 * the bridge); which fields a kind of connection takes, formats and settings keys are the
 * service's 422 `COMMERCE_INVALID_CONFIGURATION`.
 */
const tag = 'Commerce hosting';
const path = (suffix: string) => `${COMMERCE_PREFIX}${suffix}`;
// Spec 4.2: the service refuses what the rows cannot say (kinds, formats, settings keys, states)
// with 422 COMMERCE_INVALID_CONFIGURATION, and a plan without commerce with 402; states conflict (409).
const common = { tag, envelope: 'commerce' as const, bodyLimit: COMMERCE_BODY_LIMIT, errors: [402, 409, 422] };
const uuid = z.string().uuid();
/** Path parameters as OpenAPI documents them: ids are UUIDs, environments a fixed list. */
const params = (extra: Record<string, z.ZodString | z.ZodEnum<[string, ...string[]]>> = {}) =>
  z.object({ projectID: uuid, ...extra });

const field = z.string().max(MAX_FIELD_LENGTH).nullable().optional();
const secret = z.string().max(MAX_SECRET_LENGTH).nullable().optional();

const connectBody = z
  .object({
    kind: z.string().max(32),
    store_domain: z.string().max(1024),
    development_branch: z.string().max(1024).nullable().optional(),
    confirm_generic_storefront: z.boolean().nullable().optional(),
    settings: z.record(z.unknown()).nullable().optional(),
  })
  .strict();

const environmentBody = z
  .object({
    config_path: field,
    config_name: field,
    app_url: field,
    client_id: field,
    client_secret: secret,
    automation_token: secret,
    scopes: field,
    public_storefront_token: secret,
    private_storefront_token: secret,
    storefront_id: field,
    customer_account_client_id: field,
    customer_account_secret: secret,
    customer_account_url: field,
    session_secret: secret,
    // The range is the service's rule (it depends on the plan): 422 with the allowed maximum in details.
    memory_mb: z
      .number()
      .int()
      .nullable()
      .optional()
      .describe(
        `Its releases' memory limit in MiB: from ${MIN_RELEASE_MEMORY_MB} to the plan's maximum (free ${DEFAULT_MEMORY_MAX_MB.free}, pro ${DEFAULT_MEMORY_MAX_MB.pro}; over it 422 COMMERCE_MEMORY_LIMIT_EXCEEDS_PLAN with details.max_memory_mb); omitted or null: the default, ${DEFAULT_RELEASE_MEMORY_MB}. A release keeps the limit it was created with.`,
      ),
  })
  .strict();

const releaseBody = z.object({ environment: z.enum(ENVIRONMENTS), artifact: z.string().regex(/^[0-9a-f]{64}$/) }).strict();
const promotionBody = z.object({ preview_id: z.string().max(64) }).strict();
const settingsBody = z.record(z.unknown());
// Unknown query parameters are refused, as unknown body fields are (the document lists every one).
const pageQuery = z
  .object({
    limit: queryInt(1, MAX_PAGE).optional(),
    // The shape of a cursor the list issued (core/cursors.ts); its signature is the list's to check.
    cursor: z.string().max(2048).regex(CURSOR_PATTERN, 'is not a cursor this list issued').optional(),
  })
  .strict();
const analyticsQuery = z.object({ range: z.string().max(16).optional() }).strict();

export const commerceRoutes: AnyRoute[] = [
  route({
    ...common,
    params: params(),
    method: 'GET',
    path: path(''),
    summary: "The project's commerce connection, its state and its environments (secrets only as has_*)",
    operation: 'commerce-connection',
    derive: { params: '.' },
    select: (d) => d.commerceConnection,
    status: 200,
  }),
  route({
    ...common,
    params: params(),
    method: 'POST',
    path: path('/connect'),
    summary: 'Connect an app (development_branch) or a storefront (confirm_generic_storefront); 202 operation',
    operation: 'commerce-connect',
    creates: { operationID: '/data/id' },
    body: connectBody,
    derive: { body: 'input', params: '.', headers: ['Idempotency-Key'] },
    select: (d) => d.commerceConnect,
    status: 202,
  }),
  route({
    ...common,
    params: params({ operationID: uuid }),
    method: 'GET',
    path: path('/operations/{operationID}'),
    summary: 'A commerce operation: queued, running, succeeded or failed, with error_code and error_message',
    operation: 'commerce-operation',
    derive: { params: '.' },
    select: (d) => d.commerceOperation,
    status: 200,
  }),
  route({
    ...common,
    params: params({ environment: z.enum(ENVIRONMENTS) }),
    method: 'PUT',
    path: path('/environments/{environment}'),
    summary: 'Set an environment; secrets are write-only (omitted or empty keeps the stored one)',
    operation: 'commerce-put-environment',
    body: environmentBody,
    derive: { body: 'input', params: '.' },
    select: (d) => d.commercePutEnvironment,
    status: 200,
  }),
  route({
    ...common,
    params: params({ environment: z.enum(ENVIRONMENTS) }),
    method: 'POST',
    path: path('/environments/{environment}/verify'),
    summary: "Verify the environment's credentials against the commerce platform; 202 operation",
    operation: 'commerce-verify',
    creates: { operationID: '/data/id' },
    derive: { params: '.', headers: ['Idempotency-Key'] },
    select: (d) => d.commerceVerify,
    status: 202,
  }),
  route({
    ...common,
    params: params(),
    method: 'GET',
    path: path('/releases'),
    summary: 'Releases, newest first (data.items, data.next_cursor)',
    operation: 'commerce-releases',
    query: pageQuery,
    derive: { query: '.', params: '.' },
    select: (d) => d.commerceReleases,
    status: 200,
  }),
  route({
    ...common,
    params: params(),
    method: 'POST',
    path: path('/releases'),
    summary:
      "Create a release from an artifact the account uploaded itself (its SHA-256; another account's answers 404 as an unknown one); 202 release with its url",
    operation: 'commerce-create-release',
    creates: { releaseID: '/data/id' },
    body: releaseBody,
    derive: { body: '.', params: '.' },
    select: (d) => d.commerceCreateRelease,
    status: 202,
  }),
  route({
    ...common,
    params: params({ releaseID: uuid }),
    method: 'POST',
    path: path('/releases/{releaseID}/retry'),
    summary: 'Retry a failed or degraded release through the health gate; 202 release',
    operation: 'commerce-retry-release',
    creates: { releaseID: '/data/id' },
    derive: { params: '.' },
    select: (d) => d.commerceRetryRelease,
    status: 202,
  }),
  route({
    ...common,
    params: params(),
    method: 'GET',
    path: path('/webhooks'),
    summary: 'Webhook observations, newest first (data.items, data.next_cursor)',
    operation: 'commerce-webhooks',
    query: pageQuery,
    derive: { query: '.', params: '.' },
    select: (d) => d.commerceWebhooks,
    status: 200,
  }),
  route({
    ...common,
    params: params({ webhookID: uuid }),
    method: 'GET',
    path: path('/webhooks/{webhookID}'),
    summary: 'One webhook observation',
    operation: 'commerce-webhook',
    derive: { params: '.' },
    select: (d) => d.commerceWebhook,
    status: 200,
  }),
  route({
    ...common,
    params: params(),
    method: 'PUT',
    path: path('/storefront/settings'),
    summary: 'Storefront settings (documented keys only; credential-shaped keys are refused)',
    operation: 'commerce-storefront-settings',
    body: settingsBody,
    // The settings are a free-form map whose keys are the caller's: passed whole, not renamed.
    derive: { bodyAsSent: 'settings', params: '.' },
    select: (d) => d.commercePutStorefrontSettings,
    status: 200,
  }),
  route({
    ...common,
    params: params(),
    method: 'GET',
    path: path('/storefront/analytics'),
    summary: 'Storefront analytics: range 1h, 24h, 7d (with an hour timeseries) or 30d; anything else is 7d',
    operation: 'commerce-analytics',
    query: analyticsQuery,
    derive: { query: '.', params: '.' },
    select: (d) => d.commerceAnalytics,
    status: 200,
  }),
  route({
    ...common,
    params: params(),
    method: 'POST',
    path: path('/storefront/promotions'),
    summary: 'Promote a healthy preview release to production; 202 release',
    operation: 'commerce-promote',
    creates: { releaseID: '/data/id' },
    body: promotionBody,
    derive: { body: '.', params: '.' },
    select: (d) => d.commercePromote,
    status: 202,
  }),
];
