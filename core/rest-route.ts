import type { z } from 'zod';
import { camelKeys, headerName, paramName } from './field-names';

/**
 * One documented REST route, as an area declares it: parse and validate the HTTP request, run one
 * fixed GraphQL operation, wrap what it selects in the area's envelope. The bridge serves the rows
 * the composition root hands it; it never imports an area.
 */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
/** Which envelope an area answers with (spec 1.4–1.5). */
export type EnvelopeKind = 'standard' | 'commerce';

export interface RouteRequest<B = unknown, Q = Record<string, unknown>> {
  params: Record<string, string>;
  query: Q;
  body: B;
  headers: Record<string, string | string[] | undefined>;
  /** The caller's address as the bridge's listener saw it (never a client-supplied header). */
  ip: string;
}

export interface RouteDef<B = unknown, Q = Record<string, unknown>> {
  method: HttpMethod;
  /** OpenAPI-style path, e.g. `/api/v1/publisher/projects/{projectID}/metadata`. */
  path: string;
  summary: string;
  tag: string;
  /** Name of the `.graphql` document in the area's `operations/` folder, e.g. `create-site`. */
  operation: string;
  /** Strict schema of the JSON body (unknown fields are errors); absent = no body expected. */
  body?: z.ZodType<B>;
  /** Schema of the query string. */
  query?: z.ZodType<Q>;
  /**
   * Schema of the path parameters (e.g. `{ projectID: z.string().uuid() }`): documented in OpenAPI
   * (`format: uuid`, enums). The service still answers a malformed id as not found (404).
   */
  params?: z.ZodType<Record<string, string>>;
  /**
   * Error statuses this route can answer beyond those derived from the row (every route: 401, 403,
   * 429, 503; a body: 400, 413, 415; a query: 400; path parameters: 404), e.g. `[409, 422]`.
   */
  errors?: number[];
  /** A route anyone may call without a key (documented with no security and no 401/403). */
  public?: boolean;
  /**
   * What this route creates that other routes take as path parameters: parameter name → JSON
   * pointer into the success body, e.g. `{ projectID: '/data/project/id' }`. OpenAPI links this
   * operation to every route (of any area) whose path parameters it can then fill.
   */
  creates?: Record<string, string>;
  /**
   * The variables the validated request becomes by rule instead of by hand
   * (docs/decisions/0295-one-declaration-per-body.md, 0370, 0395).
   * - `body`: each top-level key in camelCase (`retention_days` → `retentionDays`,
   *   core/field-names.ts), absent keys absent; `body: 'input'` makes the body the variable `input`,
   *   `'.'` makes each of its keys a variable of its own (so does `query: '.'`). The zod schema that
   *   documents and validates the field is then its only REST spelling.
   * - `bodyAsSent`: the body passed whole as this variable, its keys as the caller wrote them (a
   *   free-form map: asset metadata, a workflow draft, storefront settings).
   * - `params: '.'` makes each path parameter a variable named by rule (`{projectID}` → `projectId`,
   *   `paramName`); any other name is the variable of the last path parameter, the one the route acts
   *   on (`params: 'id'` on `…/buckets/{bucketID}/relocations/{relocationID}` → `bucketId`, `id`), the
   *   ones before it by rule; a map names the parameters it lists (`{ assetID: 'id' }` on
   *   `…/{assetID}/versions/{versionID}/restore` → `id`, `versionId`), the others by rule.
   * - `headers`: each header a variable named by rule (`If-Match` → `ifMatch`, `headerName`), read
   *   as `HEADER_READS` says, null when absent.
   * - `fixed`: constant variables (an AI action's word, an activity feed's scope); anything derived
   *   from the request wins over them (a `{projectID}` in the path over a fixed `projectId: null`).
   */
  derive?: {
    body?: string;
    bodyAsSent?: string;
    query?: '.';
    params?: string | Record<string, string>;
    headers?: DerivedHeader[];
    fixed?: Record<string, unknown>;
  };
  /**
   * What `derive` cannot say: computed or reshaped fields (a list from one address or many, a query
   * value as text, a body split between arguments). Its keys win over the derived ones (a row derives
   * the body and reshapes one field).
   * Absent: nothing beyond `derive`.
   */
  variables?: (req: RouteRequest<B, Q>) => Record<string, unknown>;
  /** Picks the payload out of the operation's `data`. */
  select: (data: Record<string, unknown>) => unknown;
  /** HTTP status of a success. */
  status: 200 | 201 | 202 | 204;
  envelope: EnvelopeKind;
  /** The key scope this route needs (e.g. `assets:write`); documented in OpenAPI, checked by the service. */
  scope?: string;
  /** Largest accepted JSON body in bytes (default 1 MiB). */
  bodyLimit?: number;
  /** Response headers from the selected payload (e.g. `ETag` from a revision). */
  headers?: (payload: unknown) => Record<string, string>;
}

/** A route row with its body and query types erased: what tables and the bridge hold. */

export type AnyRoute = RouteDef<any, any>;

/**
 * The typed route helper: the body and query types are inferred from their zod schemas, so
 * `variables` sees `req.body` typed without casts.
 */
export function route<BS extends z.ZodTypeAny | undefined = undefined, QS extends z.ZodTypeAny | undefined = undefined>(
  def: Omit<RouteDef<InferOr<BS, undefined>, InferOr<QS, Record<string, unknown>>>, 'body' | 'query'> & {
    body?: BS;
    query?: QS;
  },
): AnyRoute {
  return def as AnyRoute;
}

type InferOr<S, D> = S extends z.ZodTypeAny ? z.infer<S> : D;

/**
 * The headers a row can derive, each read as its meaning wants (a repeated one reads its first
 * value; Node's parser joins a repeated `If-Match` or `Idempotency-Key` into one string anyway).
 */
const HEADER_READS = {
  // The precondition as sent, empty included: the service answers a missing or malformed one (428, 412).
  'If-Match': (v: string | undefined) => v ?? null,
  // An empty key is no key.
  'Idempotency-Key': (v: string | undefined) => v || null,
};
export type DerivedHeader = keyof typeof HEADER_READS;

/** The operation's variables for a validated request: what the row derives, then its own mapping. */
export function variablesOf(route: AnyRoute, req: RouteRequest): Record<string, unknown> {
  const derive = route.derive;
  const derived: Record<string, unknown> = { ...derive?.fixed };
  const body = derive?.body;
  if (body === '.') Object.assign(derived, camelKeys(req.body as Record<string, unknown> | undefined));
  else if (body) derived[body] = camelKeys(req.body as Record<string, unknown> | undefined);
  if (derive?.bodyAsSent) derived[derive.bodyAsSent] = req.body;
  if (derive?.query) Object.assign(derived, camelKeys(req.query));
  for (const [param, variable] of paramVariables(route)) derived[variable] = req.params[param];
  for (const header of derive?.headers ?? []) {
    const v = req.headers[header.toLowerCase()];
    derived[headerName(header)] = HEADER_READS[header](Array.isArray(v) ? v[0] : v);
  }
  return { ...derived, ...route.variables?.(req) };
}

/** Each route's derived path parameters and their variables, worked out at its first request. */
const paramVariablesOf = new WeakMap<AnyRoute, Array<[param: string, variable: string]>>();

/** The path parameters a row derives (`derive.params`), each with the variable it becomes. */
function paramVariables(route: AnyRoute): Array<[param: string, variable: string]> {
  let pairs = paramVariablesOf.get(route);
  if (!pairs) {
    const params = route.derive?.params;
    const names = params ? pathParams(route.path) : [];
    // Any name but '.' is the last parameter's variable (the resource the route acts on).
    const named: Record<string, string> =
      typeof params === 'object' ? params : params && params !== '.' && names.length ? { [names[names.length - 1]]: params } : {};
    const stray = Object.keys(named).filter((n) => !names.includes(n));
    if (stray.length) throw new Error(`${route.method} ${route.path}: derive.params names ${stray.join(', ')}, not in the path`);
    pairs = names.map((n) => [n, named[n] ?? paramName(n)]);
    paramVariablesOf.set(route, pairs);
  }
  return pairs;
}

/** The path parameters of an OpenAPI-style path, in order: `/a/{aID}/b/{bID}` → `['aID', 'bID']`. */
export function pathParams(path: string): string[] {
  return [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
}

/** A route row bound to its area: what the composition root hands the bridge. */
export interface AreaRoute extends AnyRoute {
  area: string;
  /** The operation's document with the fragments it spreads appended. */
  document: string;
}
