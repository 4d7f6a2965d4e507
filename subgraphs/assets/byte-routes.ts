import {
  binary,
  type ByteRoute,
  byteOperation,
  errors,
  header,
  json,
  type Json,
  jsonSchemaOf,
  pathParam,
  STANDARD_SUCCESS,
  STANDARD_WEBHOOK_HEADERS,
} from '../../core/rest-byte-route';
import type { AnyZodObject } from 'zod';

/**
 * The multipart form of an upload: `file` plus the text fields named, documented from the schema
 * the data planes parse the form with (`form`: the uploads module's `uploadFieldsSchema`), so the two
 * cannot disagree.
 */
const uploadForm = (form: AnyZodObject, fields: string[]): Json => {
  const text = jsonSchemaOf(form, {
    metadata: 'A JSON object, as text.',
    tags: 'Comma-separated, or a JSON array of strings.',
  }).properties as Record<string, Json>;
  const file = { ...binary, description: 'The bytes; the type is sniffed from them.' };
  return {
    'multipart/form-data': {
      schema: {
        type: 'object',
        additionalProperties: false,
        required: ['file'],
        properties: { file, ...Object.fromEntries(fields.map((f) => [f, text[f]])) },
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

/**
 * The Assets routes outside the rows, beside the data planes that serve them: multipart and
 * raw-byte uploads, the migration report, workflow hooks, the MCP endpoint, the upload widget and
 * inventory export files. The area's entry hands in the upload form's schema (this file, at the top
 * of the area, imports no module: docs/decisions/0290-assets-module-faces.md).
 */
export const assetsByteRoutes = (form: AnyZodObject): ByteRoute[] => [
  // Uploads (./uploads/plane.ts).
  {
    method: 'POST',
    path: '/api/v1/assets/upload',
    envelope: 'standard',
    operation: byteOperation('assets.upload', 'assets', 'Upload one file (multipart, streamed to storage)', 'bearer', {
      description:
        'A `multipart/form-data` body with one `file` part and optional text fields; the file streams to storage as it arrives. Checked against the content policy and quota before the asset is created.',
      requestBody: {
        required: true,
        content: uploadForm(form, [
          'bucket',
          'key',
          'folder',
          'visibility',
          'cache_control',
          'metadata',
          'checksum_sha256',
          'tags',
        ]),
      },
      responses: { ...ASSET_ANSWER(201), ...errors([400, 401, 402, 403, 404, 409, 413, 415, 422, 429, 503]) },
    }),
  },
  {
    method: 'PUT',
    path: '/api/v1/assets/{assetID}/replace',
    envelope: 'standard',
    operation: byteOperation('assets.replace', 'assets', "Replace an asset's bytes with a new version (multipart)", 'bearer', {
      parameters: [
        pathParam('assetID'),
        header('If-Match', false, { type: 'string' }, 'The revision (ETag) the replacement is based on; a stale one is a 412.'),
      ],
      requestBody: { required: true, content: uploadForm(form, ['checksum_sha256', 'branch']) },
      responses: { ...ASSET_ANSWER(200), ...errors([400, 401, 402, 403, 404, 409, 412, 413, 415, 422, 428, 429, 503]) },
    }),
  },
  {
    method: 'PUT',
    path: '/api/v1/assets/uploads/{capability}',
    envelope: 'standard',
    operation: byteOperation(
      'assets.upload-session-put',
      'assets',
      'Send the whole file of an upload session (signed URL)',
      'none',
      {
        description:
          'The session capability in the path authorises the request (no key). The body is the raw bytes, of any content type.',
        parameters: [pathParam('capability')],
        requestBody: { required: true, content: { '*/*': { schema: binary } } },
        responses: { ...ASSET_ANSWER(201), ...errors([400, 402, 404, 409, 413, 422, 429, 503]) },
      },
    ),
  },
  {
    method: 'PUT',
    path: '/api/v1/assets/uploads/{capability}/parts/{partNumber}',
    envelope: 'standard',
    operation: byteOperation(
      'assets.upload-session-part-put',
      'assets',
      'Send one part of a chunked upload session (signed URL)',
      'none',
      {
        parameters: [
          pathParam('capability'),
          pathParam('partNumber', { type: 'integer', minimum: 1 }),
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
      },
    ),
  },
  {
    method: 'GET',
    path: '/api/v1/assets/migrations/{migrationID}/report',
    envelope: 'standard',
    operation: byteOperation('assets.migration-report', 'assets', "A migration's report, as JSON or CSV", 'bearer', {
      description: '`format` decides; without it, an `Accept` naming `text/csv` gets CSV, anything else JSON.',
      parameters: [
        pathParam('migrationID'),
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
    operation: byteOperation(
      'assets.workflow-hook',
      'assets',
      'Start a workflow run from a signed inbound hook (Standard Webhooks)',
      'none',
      {
        description:
          "The hook's token in the path names the hook; the Standard Webhooks signature (the hook's secret) authorises it. The body is a JSON object (or empty), at most 256 KiB; a replayed `webhook-id` is a 409.",
        parameters: [pathParam('token'), ...STANDARD_WEBHOOK_HEADERS],
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
    operation: byteOperation(
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
    operation: byteOperation(
      'assets.mcp-stream',
      'assets',
      'MCP event stream: not offered by this stateless server (405)',
      'none',
      {
        description:
          'Asked for an event stream (`Accept: text/event-stream`) the answer is 405 with `Allow: POST`; otherwise the path reads as the asset `mcp`, which does not exist (404).',
        responses: {
          '403': { description: 'a foreign Origin (a JSON-RPC error)', content: json({ type: 'object' }) },
          '405': { description: 'no stream (stateless server)', content: json({ type: 'object' }) },
          ...errors([404, 429, 503]),
        },
      },
    ),
  },
  {
    method: 'DELETE',
    path: '/api/v1/assets/mcp',
    envelope: 'standard',
    operation: byteOperation(
      'assets.mcp-end-session',
      'assets',
      'MCP session end: no sessions on this stateless server',
      'none',
      {
        description:
          'With `Mcp-Session-Id` the answer is 404 with a JSON-RPC error (the session does not exist: none is ever issued); without it the path reads as the asset `mcp`, which does not exist (404 in the standard envelope).',
        parameters: [header('Mcp-Session-Id', false, { type: 'string' }, 'A session id (none is ever issued).')],
        responses: {
          '403': { description: 'a foreign Origin (a JSON-RPC error)', content: json({ type: 'object' }) },
          '404': { description: 'no such session (a JSON-RPC error), or no asset `mcp`', content: json({ type: 'object' }) },
          ...errors([429, 503]),
        },
      },
    ),
  },

  // The browser upload widget (./widget/widget-plane.ts), at `{base_url}/assets/widget`.
  {
    method: 'OPTIONS',
    path: '/assets/widget',
    envelope: 'standard',
    operation: byteOperation('assets.widget-preflight', 'assets', 'CORS preflight of a widget upload', 'none', {
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
    operation: byteOperation(
      'assets.widget-upload',
      'assets',
      'Browser upload with an upload capability (multipart, CORS)',
      'none',
      {
        parameters: [
          header(
            'X-Upload-Capability',
            true,
            { type: 'string', minLength: 1 },
            'From `POST /api/v1/assets/upload-capabilities`.',
          ),
          header('Origin', false, { type: 'string' }, "Must be one of the bucket's `allowed_origins`."),
        ],
        requestBody: { required: true, content: uploadForm(form, ['key', 'folder', 'metadata', 'checksum_sha256', 'tags']) },
        responses: { ...ASSET_ANSWER(201), ...errors([400, 401, 402, 403, 404, 409, 413, 415, 422, 429, 503]) },
      },
    ),
  },

  // Bucket inventory export files (./bucket-ops/inventory-plane.ts).
  {
    method: 'GET',
    path: '/api/v1/buckets/{bucketID}/inventory-exports/{exportID}/file',
    envelope: 'standard',
    operation: byteOperation('assets.inventory-export-file', 'assets', "Download a finished inventory export's file", 'bearer', {
      parameters: [pathParam('bucketID'), pathParam('exportID')],
      responses: {
        '200': {
          description: 'the export (CSV or NDJSON, as it was requested)',
          content: { 'text/csv': { schema: { type: 'string' } }, 'application/x-ndjson': { schema: { type: 'string' } } },
        },
        ...errors([401, 403, 404, 409, 429, 503]),
      },
    }),
  },
];
