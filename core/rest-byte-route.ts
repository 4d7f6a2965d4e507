import type { ZodTypeAny } from 'zod';
import { zodToJsonSchema } from 'zod-to-json-schema';
import type { EnvelopeKind } from './rest-route';

/**
 * A byte route as an area declares it beside its data plane (`subgraphs/<area>/byte-routes.ts`):
 * the OpenAPI description of a route the area serves outside the rows (multipart and raw-byte
 * uploads, signed inbound webhooks, downloads, the MCP endpoint), handed to the contract through
 * the area definition's `byteRoutes` as rows are through `routes`. Those routes parse their own
 * bodies, so no zod row describes them; `test/contract/openapi-routes.test.ts` walks the bridge's
 * registered routes to prove none is missing (docs/decisions/0105-openapi-byte-routes.md, 0296).
 */
export interface ByteRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'OPTIONS';
  path: string;
  /** The envelope its errors come in (and the bridge's own answers on its path: 404, 405, 429). */
  envelope: EnvelopeKind;
  operation: Json;
}

export type Json = Record<string, unknown>;

export const STANDARD_ERROR = { $ref: '#/components/schemas/StandardError' };
export const COMMERCE_ERROR = { $ref: '#/components/schemas/CommerceError' };
export const STANDARD_SUCCESS = { $ref: '#/components/schemas/StandardSuccess' };
export const COMMERCE_SUCCESS = { $ref: '#/components/schemas/CommerceSuccess' };

/** A JSON media type with its schema. */
export const json = (schema: Json): Json => ({ 'application/json': { schema } });
export const binary = { type: 'string', format: 'binary' };

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

/** Error answers of a byte route: the area's error envelope for each status. */
export const errors = (statuses: number[], schema: Json = STANDARD_ERROR): Json =>
  Object.fromEntries(statuses.map((s) => [String(s), { description: DESCRIPTIONS[s] ?? 'error', content: json(schema) }]));

export const header = (name: string, required: boolean, schema: Json, description: string): Json => ({
  name,
  in: 'header',
  required,
  description,
  schema,
});

export const pathParam = (name: string, schema: Json = { type: 'string', minLength: 1 }): Json => ({
  name,
  in: 'path',
  required: true,
  schema,
});

/** The Standard Webhooks headers of a signed inbound delivery (all three required to verify). */
export const STANDARD_WEBHOOK_HEADERS = [
  header('webhook-id', true, { type: 'string', minLength: 1 }, 'Standard Webhooks message id (deduplication key).'),
  header('webhook-timestamp', true, { type: 'string', pattern: '^[0-9]+$' }, 'Unix seconds; within 5 minutes of now.'),
  header(
    'webhook-signature',
    true,
    { type: 'string', minLength: 1 },
    'Space-separated `v1,<base64 HMAC-SHA256>` signatures over `id.timestamp.body`.',
  ),
];

/** One OpenAPI operation: id, tag, summary, who may call it (a key, a node token or anyone) and the rest. */
export const byteOperation = (
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

/**
 * The JSON Schema of a zod schema as the OpenAPI document states it (no `$schema`, no `$ref`s): a
 * row's body and query, and a byte route's body from the schema its data plane parses with, so the
 * document and the validation are one object. `descriptions` are added to top-level properties.
 */
export function jsonSchemaOf(schema: ZodTypeAny, descriptions: Record<string, string> = {}): Json {
  const out = zodToJsonSchema(schema, { target: 'jsonSchema7', $refStrategy: 'none' }) as Json;
  delete out.$schema;
  const props = out.properties as Record<string, Json> | undefined;
  for (const [name, description] of Object.entries(descriptions)) if (props?.[name]) props[name].description = description;
  return out;
}
