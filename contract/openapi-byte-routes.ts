/**
 * The OpenAPI description of the routes the bridge serves outside the area rows: its own
 * operational routes and the areas' raw byte routes (`http.bridge` data planes: multipart and
 * raw-byte uploads, signed inbound webhooks, the MCP endpoint, the widget, report and export
 * downloads). Those routes parse their own bodies, so no zod row describes them; each is described
 * here by hand, and `test/contract/openapi-routes.test.ts` walks the bridge's registered routes to
 * prove none is missing (docs/decisions/0105-openapi-byte-routes.md).
 */

import type { EnvelopeKind } from '../core/rest-route';

type Json = Record<string, unknown>;

const STANDARD_ERROR = { $ref: '#/components/schemas/StandardError' };
const COMMERCE_ERROR = { $ref: '#/components/schemas/CommerceError' };
const STANDARD_SUCCESS = { $ref: '#/components/schemas/StandardSuccess' };
const COMMERCE_SUCCESS = { $ref: '#/components/schemas/CommerceSuccess' };

const json = (schema: Json): Json => ({ 'application/json': { schema } });
const binary = { type: 'string', format: 'binary' };

/** Error answers of a byte route: the area's error envelope for each status. */
const errors = (statuses: number[], schema: Json = STANDARD_ERROR): Json =>
  Object.fromEntries(statuses.map((s) => [String(s), { description: DESCRIPTIONS[s] ?? 'error', content: json(schema) }]));

const DESCRIPTIONS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  412: 'Precondition Failed',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  428: 'Precondition Required',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

const header = (name: string, required: boolean, schema: Json, description: string): Json => ({
  name,
  in: 'header',
  required,
  description,
  schema,
});
const path = (name: string, schema: Json = { type: 'string', minLength: 1 }): Json => ({
  name,
  in: 'path',
  required: true,
  schema,
});

/** The Standard Webhooks headers of a signed inbound delivery (all three required to verify). */
const STANDARD_WEBHOOK_HEADERS = [
  header('webhook-id', true, { type: 'string', minLength: 1 }, 'Standard Webhooks message id (deduplication key).'),
  header('webhook-timestamp', true, { type: 'string', pattern: '^[0-9]+$' }, 'Unix seconds; within 5 minutes of now.'),
  header(
    'webhook-signature',
    true,
    { type: 'string', minLength: 1 },
    'Space-separated `v1,<base64 HMAC-SHA256>` signatures over `id.timestamp.body`.',
  ),
];

/** The multipart form of an upload (`file` plus the text fields `uploadFieldsSchema` accepts). */
const uploadForm = (fields: string[]): Json => {
  const all: Record<string, Json> = {
    file: { ...binary, description: 'The bytes; the type is sniffed from them.' },
    bucket: { type: 'string', minLength: 1 },
    key: { type: 'string', minLength: 1, maxLength: 1024 },
    folder: { type: 'string', maxLength: 1024 },
    visibility: { type: 'string', enum: ['public', 'private'] },
    cache_control: { type: 'string', minLength: 1, maxLength: 256 },
    metadata: { type: 'string', description: 'A JSON object, as text.' },
    checksum_sha256: { type: 'string', pattern: '^[0-9a-fA-F]{64}$' },
    tags: { type: 'string', maxLength: 4096, description: 'Comma-separated, or a JSON array of strings.' },
    branch: { type: 'string', maxLength: 64 },
  };
  return {
    'multipart/form-data': {
      schema: {
        type: 'object',
        additionalProperties: false,
        required: ['file'],
        properties: Object.fromEntries(['file', ...fields].map((f) => [f, all[f]])),
      },
    },
  };
};

const ASSET_ANSWER = (status: number): Json => ({
  [String(status)]: {
    description: 'the asset (spec 4.3 asset view)',
    headers: { ETag: { description: 'The asset revision, for `If-Match`.', schema: { type: 'string' } } },
    content: json(STANDARD_SUCCESS),
  },
});

const WEBHOOK_ANSWER = (description: string): Json => ({
  '200': { description, content: json(STANDARD_SUCCESS) },
});

/** One byte route: method, OpenAPI path and operation. */
export interface ByteRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'OPTIONS';
  path: string;
  /** The envelope its errors come in (and the bridge's own answers on its path: 404, 405, 429). */
  envelope: EnvelopeKind;
  operation: Json;
}

const op = (
  operationId: string,
  tag: string,
  summary: string,
  security: 'bearer' | 'node' | 'none',
  rest: { parameters?: Json[]; requestBody?: Json; responses: Json; description?: string },
): Json => ({
  operationId,
  summary,
  ...(rest.description ? { description: rest.description } : {}),
  tags: [tag],
  security: security === 'bearer' ? [{ bearer: [] }] : security === 'node' ? [{ nodeToken: [] }] : [],
  parameters: rest.parameters ?? [],
  ...(rest.requestBody ? { requestBody: rest.requestBody } : {}),
  responses: rest.responses,
});

/** Every route the bridge serves that no area row describes. */
export const BYTE_ROUTES: readonly ByteRoute[] = [
  // The bridge's own operational routes (rest-bridge/server.ts).
  {
    method: 'GET',
    path: '/healthz',
    envelope: 'standard',
    operation: op('platform.healthz', 'platform', 'Liveness: the process answers', 'none', {
      responses: {
        '200': {
          description: 'alive',
          content: json({
            type: 'object',
            required: ['status'],
            additionalProperties: false,
            properties: { status: { const: 'ok' } },
          }),
        },
      },
    }),
  },
  {
    method: 'GET',
    path: '/readyz',
    envelope: 'standard',
    operation: op('platform.readyz', 'platform', 'Readiness: MongoDB reachable (Kafka down is `degraded`)', 'none', {
      responses: Object.fromEntries(
        [
          ['200', 'ready'],
          ['503', 'not ready'],
        ].map(([s, d]) => [
          s,
          {
            description: d,
            content: json({
              type: 'object',
              required: ['status', 'checks'],
              additionalProperties: false,
              properties: {
                status: { type: 'string', enum: ['ready', 'not_ready'] },
                checks: { type: 'object', additionalProperties: { type: 'string' } },
              },
            }),
          },
        ]),
      ),
    }),
  },
  {
    method: 'GET',
    path: '/api/v1/openapi.json',
    envelope: 'standard',
    operation: op('platform.openapi', 'platform', 'This document', 'none', {
      responses: { '200': { description: 'OpenAPI 3.1', content: json({ type: 'object', required: ['openapi', 'paths'] }) } },
    }),
  },
  {
    method: 'GET',
    path: '/metrics',
    envelope: 'standard',
    operation: op('platform.metrics', 'platform', "The process's Prometheus metrics", 'none', {
      responses: {
        '200': {
          description: 'Prometheus text exposition format 0.0.4',
          content: { 'text/plain': { schema: { type: 'string' } } },
        },
      },
    }),
  },

  // Assets uploads (subgraphs/assets/upload-plane.ts).
  {
    method: 'POST',
    path: '/api/v1/assets/upload',
    envelope: 'standard',
    operation: op('assets.upload', 'assets', 'Upload one file (multipart, streamed to storage)', 'bearer', {
      description:
        'A `multipart/form-data` body with one `file` part and optional text fields; the file streams to storage as it arrives. Checked against the content policy and quota before the asset is created.',
      requestBody: {
        required: true,
        content: uploadForm(['bucket', 'key', 'folder', 'visibility', 'cache_control', 'metadata', 'checksum_sha256', 'tags']),
      },
      responses: { ...ASSET_ANSWER(201), ...errors([400, 401, 402, 403, 404, 409, 413, 415, 422, 429, 503]) },
    }),
  },
  {
    method: 'PUT',
    path: '/api/v1/assets/{assetID}/replace',
    envelope: 'standard',
    operation: op('assets.replace', 'assets', "Replace an asset's bytes with a new version (multipart)", 'bearer', {
      parameters: [
        path('assetID'),
        header('If-Match', false, { type: 'string' }, 'The revision (ETag) the replacement is based on; a stale one is a 412.'),
      ],
      requestBody: { required: true, content: uploadForm(['checksum_sha256', 'branch']) },
      responses: { ...ASSET_ANSWER(200), ...errors([400, 401, 402, 403, 404, 409, 412, 413, 415, 422, 428, 429, 503]) },
    }),
  },
  {
    method: 'PUT',
    path: '/api/v1/assets/uploads/{capability}',
    envelope: 'standard',
    operation: op('assets.upload-session-put', 'assets', 'Send the whole file of an upload session (signed URL)', 'none', {
      description:
        'The session capability in the path authorises the request (no key). The body is the raw bytes, of any content type.',
      parameters: [path('capability')],
      requestBody: { required: true, content: { '*/*': { schema: binary } } },
      responses: { ...ASSET_ANSWER(201), ...errors([400, 402, 404, 409, 413, 422, 429, 503]) },
    }),
  },
  {
    method: 'PUT',
    path: '/api/v1/assets/uploads/{capability}/parts/{partNumber}',
    envelope: 'standard',
    operation: op('assets.upload-session-part-put', 'assets', 'Send one part of a chunked upload session (signed URL)', 'none', {
      parameters: [
        path('capability'),
        path('partNumber', { type: 'integer', minimum: 1 }),
        header(
          'X-Content-SHA256',
          false,
          { type: 'string', pattern: '^[0-9a-fA-F]{64}$' },
          "The part's SHA-256 (hex); a mismatch is a 422 and the part is not kept.",
        ),
      ],
      requestBody: { required: true, content: { '*/*': { schema: binary } } },
      responses: {
        '200': { description: 'the part was stored', content: json(STANDARD_SUCCESS) },
        ...errors([400, 402, 404, 409, 413, 422, 429, 503]),
      },
    }),
  },
  {
    method: 'GET',
    path: '/api/v1/assets/migrations/{migrationID}/report',
    envelope: 'standard',
    operation: op('assets.migration-report', 'assets', "A migration's report, as JSON or CSV", 'bearer', {
      description: '`format` decides; without it, an `Accept` naming `text/csv` gets CSV, anything else JSON.',
      parameters: [
        path('migrationID'),
        { name: 'format', in: 'query', required: false, schema: { type: 'string', enum: ['json', 'csv'] } },
      ],
      responses: {
        '200': {
          description: 'the report',
          content: {
            'application/json': { schema: { type: 'object' } },
            'text/csv': { schema: { type: 'string' } },
          },
        },
        ...errors([400, 401, 403, 404, 429, 503]),
      },
    }),
  },
  {
    method: 'POST',
    path: '/api/v1/assets/workflow-hooks/{token}',
    envelope: 'standard',
    operation: op(
      'assets.workflow-hook',
      'assets',
      'Start a workflow run from a signed inbound hook (Standard Webhooks)',
      'none',
      {
        description:
          "The hook's token in the path names the hook; the Standard Webhooks signature (the hook's secret) authorises it. The body is a JSON object (or empty), at most 256 KiB; a replayed `webhook-id` is a 409.",
        parameters: [path('token'), ...STANDARD_WEBHOOK_HEADERS],
        requestBody: { required: false, content: json({ type: 'object' }) },
        responses: {
          '202': { description: 'the run was started', content: json(STANDARD_SUCCESS) },
          ...errors([400, 401, 404, 409, 413, 429, 503]),
        },
      },
    ),
  },
  {
    method: 'POST',
    path: '/api/v1/assets/mcp',
    envelope: 'standard',
    operation: op(
      'assets.mcp',
      'assets',
      'Model Context Protocol endpoint (Streamable HTTP, stateless, JSON answers)',
      'bearer',
      {
        parameters: [header('Accept', false, { type: 'string' }, 'MCP clients send `application/json, text/event-stream`.')],
        requestBody: {
          required: true,
          content: json({
            type: 'object',
            required: ['jsonrpc', 'method'],
            properties: { jsonrpc: { const: '2.0' }, method: { type: 'string' }, id: {}, params: { type: 'object' } },
          }),
        },
        responses: {
          '200': { description: 'a JSON-RPC answer', content: json({ type: 'object' }) },
          '202': { description: 'a notification or response was accepted (no body)' },
          '400': { description: 'not a JSON-RPC request', content: json({ type: 'object' }) },
          '406': { description: 'the Accept header does not allow JSON', content: json({ type: 'object' }) },
          '415': { description: 'not JSON', content: json({ type: 'object' }) },
          ...errors([401, 403, 413, 429, 503]),
        },
      },
    ),
  },
  {
    method: 'GET',
    path: '/api/v1/assets/mcp',
    envelope: 'standard',
    operation: op('assets.mcp-stream', 'assets', 'MCP event stream: not offered by this stateless server (405)', 'none', {
      description:
        'Asked for an event stream (`Accept: text/event-stream`) the answer is 405 with `Allow: POST`; otherwise the path reads as the asset `mcp`, which does not exist (404).',
      responses: {
        '403': { description: 'a foreign Origin (a JSON-RPC error)', content: json({ type: 'object' }) },
        '405': { description: 'no stream (stateless server)', content: json({ type: 'object' }) },
        ...errors([404, 429, 503]),
      },
    }),
  },
  {
    method: 'DELETE',
    path: '/api/v1/assets/mcp',
    envelope: 'standard',
    operation: op('assets.mcp-end-session', 'assets', 'MCP session end: no sessions on this stateless server', 'none', {
      description:
        'With `Mcp-Session-Id` the answer is 404 with a JSON-RPC error (the session does not exist: none is ever issued); without it the path reads as the asset `mcp`, which does not exist (404 in the standard envelope).',
      parameters: [header('Mcp-Session-Id', false, { type: 'string' }, 'A session id (none is ever issued).')],
      responses: {
        '403': { description: 'a foreign Origin (a JSON-RPC error)', content: json({ type: 'object' }) },
        '404': { description: 'no such session (a JSON-RPC error), or no asset `mcp`', content: json({ type: 'object' }) },
        ...errors([429, 503]),
      },
    }),
  },

  // The browser upload widget (subgraphs/assets/widget/widget-plane.ts), at `{base_url}/assets/widget`.
  {
    method: 'OPTIONS',
    path: '/assets/widget',
    envelope: 'standard',
    operation: op('assets.widget-preflight', 'assets', 'CORS preflight of a widget upload', 'none', {
      parameters: [
        header('Origin', false, { type: 'string' }, 'The page origin.'),
        header('Access-Control-Request-Method', false, { type: 'string' }, '`POST`.'),
      ],
      responses: { '204': { description: 'preflight answer (grants nothing by itself)' }, ...errors([429, 503]) },
    }),
  },
  {
    method: 'POST',
    path: '/assets/widget',
    envelope: 'standard',
    operation: op('assets.widget-upload', 'assets', 'Browser upload with an upload capability (multipart, CORS)', 'none', {
      parameters: [
        header('X-Upload-Capability', true, { type: 'string', minLength: 1 }, 'From `POST /api/v1/assets/upload-capabilities`.'),
        header('Origin', false, { type: 'string' }, "Must be one of the bucket's `allowed_origins`."),
      ],
      requestBody: { required: true, content: uploadForm(['key', 'folder', 'metadata', 'checksum_sha256', 'tags']) },
      responses: { ...ASSET_ANSWER(201), ...errors([400, 401, 402, 403, 404, 409, 413, 415, 422, 429, 503]) },
    }),
  },

  // Bucket inventory export files (subgraphs/assets/bucket-ops/inventory-plane.ts).
  {
    method: 'GET',
    path: '/api/v1/buckets/{bucketID}/inventory-exports/{exportID}/file',
    envelope: 'standard',
    operation: op('assets.inventory-export-file', 'assets', "Download a finished inventory export's file", 'bearer', {
      parameters: [path('bucketID'), path('exportID')],
      responses: {
        '200': {
          description: 'the export (CSV or NDJSON, as it was requested)',
          content: { 'text/csv': { schema: { type: 'string' } }, 'application/x-ndjson': { schema: { type: 'string' } } },
        },
        ...errors([401, 403, 404, 409, 429, 503]),
      },
    }),
  },

  // Commerce release artifacts (subgraphs/commerce/index.ts, docs/decisions/0130-commerce-runtime.md).
  {
    method: 'PUT',
    path: '/api/v1/projects/{projectID}/commerce/artifacts',
    envelope: 'commerce',
    operation: op(
      'commerce.upload-artifact',
      'commerce',
      'Upload a bundle (a tar archive) as a content-addressed release artifact',
      'bearer',
      {
        description:
          "The body is the tar archive of a storefront bundle (`index.js` or `dist/server/index.js`) or an app bundle (`server.mjs`), at most 64 MiB (413 `COMMERCE_PAYLOAD_TOO_LARGE`; a larger `Content-Length` is refused before the body is read); links, absolute paths and `..` are refused (422). The body is streamed to disk while it is hashed. The answer, `data { artifact, bytes, stored: true }`, names its SHA-256, which `POST …/commerce/releases` takes; it is the same whether or not the bytes were stored before. The artifact is held by the key's account: only that account may release it (another account's hash answers 404 as an unknown one). The account's holds count against its plan's artifact quota (413 `COMMERCE_ARTIFACT_QUOTA_EXCEEDED`; uploading what it already holds is free). Key, scope and project are checked before the body is read.",
        parameters: [path('projectID', { type: 'string', format: 'uuid' })],
        requestBody: { required: true, content: { 'application/x-tar': { schema: binary }, '*/*': { schema: binary } } },
        responses: {
          '201': {
            description: 'held by the account (the same answer whether or not the bytes were stored before)',
            content: json(COMMERCE_SUCCESS),
          },
          ...errors([401, 402, 403, 404, 413, 422, 429], COMMERCE_ERROR),
          ...errors([503]),
        },
      },
    ),
  },

  // Signed inbound webhooks.
  {
    method: 'POST',
    path: '/api/v1/commerce/webhooks',
    envelope: 'commerce',
    operation: op(
      'commerce.webhook-receiver',
      'commerce',
      "Commerce platform webhooks (Standard Webhooks, the platform app's secret)",
      'none',
      {
        description:
          'Verified over the raw body before it is parsed; one observation per connection of the store, once per `webhook-id`.',
        parameters: STANDARD_WEBHOOK_HEADERS,
        requestBody: { required: true, content: { '*/*': { schema: binary } } },
        responses: {
          '200': { description: 'recorded (or a duplicate)', content: json(COMMERCE_SUCCESS) },
          ...errors([401, 413, 422, 429], COMMERCE_ERROR),
          ...errors([503]),
        },
      },
    ),
  },
  {
    method: 'POST',
    path: '/api/v1/billing/webhooks/payments/{provider}',
    envelope: 'standard',
    operation: op(
      'billing.payment-webhook',
      'billing',
      'Payment provider webhooks (Standard Webhooks, PAYMENT_WEBHOOK_SECRET)',
      'none',
      {
        description:
          'Verified over the raw body before it is parsed; a verified payment credits the checkout once, however often it is delivered. A bad signature is a 400 `invalid_signature`.',
        parameters: [path('provider'), ...STANDARD_WEBHOOK_HEADERS],
        requestBody: { required: true, content: { '*/*': { schema: binary } } },
        responses: { ...WEBHOOK_ANSWER('handled'), ...errors([400, 404, 409, 413, 429, 503]) },
      },
    ),
  },
  // The node agent's protocol (subgraphs/publisher/node-agent-api.ts; docs/decisions/0170-node-agent.md):
  // authenticated by the node's token in `X-Node-Token`, scoped to that node's own work.
  ...nodeAgentRoutes(),
];

/** The six calls of a node agent (`nodes agent`): heartbeat, claim, lease release, progress, result, desired sites. */
function nodeAgentRoutes(): ByteRoute[] {
  const session = { type: 'string', minLength: 8, maxLength: 100, description: 'The agent process that holds its claims.' };
  const answer = (description: string): Json => ({
    '200': { description, content: json(STANDARD_SUCCESS) },
    ...errors([400, 401, 409, 413, 415, 429]),
  });
  const body = (properties: Json, required: string[]): Json => ({
    required: true,
    content: json({ type: 'object', additionalProperties: false, required, properties }),
  });
  const taskId = path('taskId');
  const route = (method: 'GET' | 'POST', p: string, id: string, summary: string, rest: Json): ByteRoute => ({
    method,
    path: `/v1/node-agent${p}`,
    envelope: 'standard',
    operation: op(`publisher.nodeAgent.${id}`, 'publisher', summary, 'node', rest as never),
  });
  return [
    route('POST', '/heartbeat', 'heartbeat', 'A node agent is alive (every 5 s); answers the node and its status', {
      requestBody: body({ edge_port: { type: ['integer', 'null'], minimum: 1, maximum: 65535 }, session }, []),
      responses: answer(
        'the node, its status, the heartbeat period and, for the hosted node, whether this session holds its lease',
      ),
    }),
    route('POST', '/tasks/claim', 'claim', "Claims this node's oldest open task (null when none)", {
      requestBody: body(
        {
          session,
          // MAX_CLAIM_WAIT_MS of subgraphs/publisher/node-agent-api.ts.
          wait_ms: { type: 'integer', minimum: 0, maximum: 20_000, description: 'How long to wait for a task (a long poll).' },
        },
        ['session'],
      ),
      responses: answer('`task` or null'),
    }),
    route(
      'POST',
      '/lease/release',
      'releaseLease',
      "A stopping agent gives up the hosted node's lease (a no-op for other nodes)",
      {
        requestBody: body({ session }, ['session']),
        responses: answer('released'),
      },
    ),
    route('POST', '/tasks/{taskId}/progress', 'progress', "Records a claimed task's progress (the step's detail)", {
      parameters: [taskId],
      requestBody: body({ session, detail: { type: 'string', maxLength: 1000 } }, ['session', 'detail']),
      responses: answer('recorded'),
    }),
    route('POST', '/tasks/{taskId}/result', 'result', "A claimed task's outcome; a task this agent no longer holds is 409", {
      parameters: [taskId],
      requestBody: body(
        {
          session,
          outcome: {
            oneOf: [
              {
                type: 'object',
                additionalProperties: false,
                required: ['ok'],
                properties: { ok: { const: true }, result: { type: ['object', 'null'] } },
              },
              {
                type: 'object',
                additionalProperties: false,
                required: ['ok', 'code', 'message'],
                properties: {
                  ok: { const: false },
                  code: { type: 'string', minLength: 1, maxLength: 100 },
                  message: { type: 'string', maxLength: 2000 },
                  retriable: { type: 'boolean' },
                },
              },
            ],
          },
        },
        ['session', 'outcome'],
      ),
      responses: answer('recorded'),
    }),
    route('GET', '/sites', 'sites', 'The sites placed on this node and the state each should be in', {
      responses: answer('`sites`'),
    }),
  ];
}
