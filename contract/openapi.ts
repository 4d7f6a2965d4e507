import { STATUS_CODES } from 'node:http';
import type { ZodTypeAny } from 'zod';
import { type ByteRoute, jsonSchemaOf } from '../core/rest-byte-route';
import { type AreaRoute, type EnvelopeKind, pathParams } from '../core/rest-route';
import { PLATFORM_ROUTES } from './openapi-byte-routes';

type Json = Record<string, unknown>;

/**
 * The OpenAPI operationId of each row: `<area>.<operation>`, and when several rows share one
 * document (list and exact reads of one feed, say), the later ones add their method and path words
 * so every id stays unique and stable.
 */
export function operationIds(routes: readonly AreaRoute[]): Map<AreaRoute, string> {
  const ids = new Map<AreaRoute, string>();
  const seen = new Set<string>();
  for (const r of routes) {
    let id = `${r.area}.${r.operation}`;
    if (seen.has(id)) {
      const words = r.path.split('/').filter((w) => w && !w.startsWith('{') && w !== 'api' && w !== 'v1');
      id = `${id}.${r.method.toLowerCase()}-${words.join('-')}`;
      for (let n = 2; seen.has(id); n++) id = `${id}-${n}`;
    }
    seen.add(id);
    ids.set(r, id);
  }
  return ids;
}

/**
 * Every error status a row can answer with, derived from the row and widened by its `errors`:
 * every route but a `public` one is authenticated (401 no or bad key, 403 role or scope), rate-limited (429) and
 * answers 503 when an engine behind it is down; a body can be invalid (400), too large (413) or not
 * JSON (415); a query can be invalid (400); a path parameter can name nothing the caller sees (404).
 */
export function errorStatuses(r: AreaRoute): number[] {
  const s = new Set<number>([...(r.public ? [] : [401, 403]), 429, 503, ...(r.errors ?? [])]);
  if (r.body) [400, 413, 415].forEach((x) => s.add(x));
  if (r.query) s.add(400);
  if (pathParams(r.path).length) s.add(404);
  // Commerce answers a refused body or query with COMMERCE_INVALID_CONFIGURATION's 422 (rest-bridge/envelopes.ts).
  if (r.envelope === 'commerce' && s.delete(400)) s.add(422);
  return [...s].sort((a, b) => a - b);
}

const toSchema = (schema: ZodTypeAny): Json => jsonSchemaOf(schema);

/** JSON Schema of each path parameter: the row's `params` schema, or a plain non-empty string. */
function paramSchemas(r: AreaRoute): Record<string, Json> {
  const props = r.params ? (((toSchema(r.params) as Json).properties ?? {}) as Record<string, Json>) : {};
  return Object.fromEntries(pathParams(r.path).map((n) => [n, props[n] ?? { type: 'string', minLength: 1 }]));
}

/** The query string's parameters from the row's zod object (coerced numbers stay numbers). */
function queryParameters(r: AreaRoute): Json[] {
  if (!r.query) return [];
  const s = toSchema(r.query);
  const props = (s.properties ?? {}) as Record<string, Json>;
  const required = new Set((s.required ?? []) as string[]);
  return Object.entries(props).map(([name, schema]) => ({ name, in: 'query', required: required.has(name), schema }));
}

const errorBody: Json = {
  type: 'object',
  additionalProperties: false,
  required: ['code', 'message', 'details'],
  properties: { code: { type: 'string', minLength: 1 }, message: { type: 'string' }, details: { type: 'object' } },
};

/** The envelopes of spec 1.4–1.5 as JSON Schemas (`rest-bridge/envelopes.ts` builds them). */
export function envelopeSchemas(kind: EnvelopeKind): { success: Json; error: Json } {
  if (kind === 'commerce') {
    const common = { status_code: { type: 'integer' }, message: { type: 'string' } };
    return {
      success: {
        type: 'object',
        additionalProperties: false,
        required: ['success', 'status', 'status_code', 'message', 'data'],
        properties: { success: { const: true }, status: { const: 'success' }, ...common, data: {} },
      },
      error: {
        type: 'object',
        additionalProperties: false,
        required: ['success', 'status', 'status_code', 'message', 'data', 'error'],
        properties: {
          success: { const: false },
          status: { const: 'error' },
          ...common,
          data: { type: 'null' },
          // Every commerce error code carries the prefix (spec convention 3).
          error: {
            ...errorBody,
            properties: { ...(errorBody.properties as Json), code: { type: 'string', pattern: '^COMMERCE_[A-Z_]+$' } },
          },
        },
      },
    };
  }
  return {
    success: {
      type: 'object',
      additionalProperties: false,
      required: ['success', 'data'],
      properties: { success: { const: true }, data: {} },
    },
    error: {
      type: 'object',
      additionalProperties: false,
      required: ['success', 'error'],
      properties: { success: { const: false }, error: errorBody },
    },
  };
}

const componentName = (kind: EnvelopeKind, which: 'success' | 'error') =>
  `${kind === 'commerce' ? 'Commerce' : 'Standard'}${which === 'success' ? 'Success' : 'Error'}`;
const ref = (kind: EnvelopeKind, which: 'success' | 'error') => ({
  $ref: `#/components/schemas/${componentName(kind, which)}`,
});

/**
 * Created values that link across areas: the project is the kernel's shared key (the projects
 * directory port) that every area's paths take. Any other created id links within its area only,
 * so a commerce `{operationID}` never feeds the publisher's operations route.
 */
const SHARED_PARAMS = new Set(['projectID']);

/**
 * OpenAPI links from each row that `creates` something to every row (of any area) whose path
 * parameters it can fill: what it created (a pointer into its response) plus its own path
 * parameters (`$request.path.…`). A target must take at least one created value.
 */
function linksOf(source: AreaRoute, all: readonly AreaRoute[], ids: Map<AreaRoute, string>): Json | undefined {
  if (!source.creates) return undefined;
  const own = new Set(pathParams(source.path));
  const links: Json = {};
  for (const target of all) {
    if (target === source) continue;
    const created = (n: string) => n in source.creates! && (target.area === source.area || SHARED_PARAMS.has(n));
    const needs = pathParams(target.path);
    if (!needs.some(created)) continue;
    if (!needs.every((n) => created(n) || (own.has(n) && target.area === source.area))) continue;
    const parameters = Object.fromEntries(
      needs.map((n) => [n, created(n) ? `$response.body#${source.creates![n]}` : `$request.path.${n}`]),
    );
    links[ids.get(target)!.replace(/(^|[-.@ ])(\w)/g, (_, _d, c: string) => c.toUpperCase())] = {
      operationId: ids.get(target),
      parameters,
      description: `${target.method} ${target.path} with what this operation created`,
    };
  }
  return Object.keys(links).length ? links : undefined;
}

/**
 * Answers given before any route runs, so on every operation: Node's HTTP parser refuses a request
 * line and headers beyond 16 KiB (431, no body); the router refuses a path parameter over 100
 * characters (414, Fastify's own JSON body, not an area envelope).
 */
function refusedBeforeTheBridge(path: string): Json {
  return {
    ...(pathParams(path).length
      ? {
          '414': {
            description: 'URI Too Long (a path parameter over 100 characters; refused by the router)',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['statusCode', 'code', 'message'],
                  properties: { statusCode: { const: 414 }, code: { type: 'string' }, message: { type: 'string' } },
                },
              },
            },
          },
        }
      : {}),
    '431': { description: 'Request Header Fields Too Large (request line and headers over 16 KiB; no body)' },
  };
}

/**
 * OpenAPI 3.1 generated from the route rows (what `schema/openapi.json` holds), with the routes no
 * row describes: the bridge's own (`./openapi-byte-routes.ts`) and the areas' byte routes (each
 * area's `byteRoutes`, declared in `subgraphs/<area>/byte-routes.ts`).
 */
export function buildOpenApi(routes: readonly AreaRoute[], areaByteRoutes: readonly ByteRoute[] = []): Json {
  const byteRoutes = [...PLATFORM_ROUTES, ...areaByteRoutes];
  const paths: Record<string, Json> = {};
  const kinds = new Set<EnvelopeKind>();
  const ids = operationIds(routes);
  for (const r of routes) {
    kinds.add(r.envelope);
    const schemas = paramSchemas(r);
    const parameters = [
      ...pathParams(r.path).map((name) => ({ name, in: 'path', required: true, schema: schemas[name] })),
      ...queryParameters(r),
    ];
    const responses: Json = {};
    const links = linksOf(r, routes, ids);
    if (r.status === 204) responses['204'] = { description: 'success (no content)', ...(links ? { links } : {}) };
    else {
      responses[String(r.status)] = {
        description: 'success',
        content: { 'application/json': { schema: ref(r.envelope, 'success') } },
        ...(links ? { links } : {}),
      };
    }
    Object.assign(responses, refusedBeforeTheBridge(r.path));
    for (const status of errorStatuses(r)) {
      responses[String(status)] = {
        description: STATUS_CODES[status] ?? 'error',
        content: { 'application/json': { schema: ref(r.envelope, 'error') } },
      };
    }
    const op: Json = {
      operationId: ids.get(r),
      summary: r.summary,
      tags: [r.tag],
      security: r.public ? [] : [{ bearer: [] }],
      parameters,
      responses,
    };
    if (r.scope) op['x-scope'] = r.scope;
    if (r.body) {
      // A body whose fields are all optional may be omitted (the bridge reads no body as `{}`).
      const required = !r.body.safeParse({}).success;
      op.requestBody = { required, content: { 'application/json': { schema: toSchema(r.body) } } };
    }
    (paths[r.path] ??= {})[r.method.toLowerCase()] = op;
  }
  for (const b of byteRoutes) {
    const method = b.method.toLowerCase();
    if (paths[b.path]?.[method]) throw new Error(`${b.method} ${b.path} is both a row and a byte route`);
    kinds.add(b.envelope);
    const responses = { ...(b.operation.responses as Json), ...refusedBeforeTheBridge(b.path) };
    (paths[b.path] ??= {})[method] = { ...b.operation, responses };
  }
  const schemas: Json = {};
  for (const kind of [...kinds].sort()) {
    const e = envelopeSchemas(kind);
    schemas[componentName(kind, 'success')] = e.success;
    schemas[componentName(kind, 'error')] = e.error;
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Platform API', version: '1' },
    servers: [{ url: '/' }],
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer' },
        // A connected node's agent (docs/decisions/0170-node-agent.md): its node token, not an API key.
        nodeToken: { type: 'apiKey', in: 'header', name: 'X-Node-Token' },
      },
      schemas,
    },
    paths,
  };
}
