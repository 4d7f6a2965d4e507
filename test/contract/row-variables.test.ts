import type { ZodTypeAny } from 'zod';
import { areaRoutes } from '../../app/areas';
import { type AreaRoute, pathParams, type RouteRequest, variablesOf } from '../../core/rest-route';

/**
 * Every row's variables for a fixed set of sample requests, kept as a snapshot: a change to how a
 * row derives or maps its variables (a hand mapping replaced by a rule, a rule changed) fails here
 * unless it gives the same variables for the same request (docs/decisions/0395-headers-and-constants-by-rule.md).
 *
 * The samples come from each row's own schemas: every path parameter set (a marker naming it),
 * bodies and queries with every top-level key set, then each key in turn absent or set to each of
 * its other shapes (enum values, union options, null, both booleans, one nested variant at a time),
 * the `If-Match` and `Idempotency-Key` headers absent, set and empty, and the caller's address
 * known and unknown. Header values are strings: Node's parser joins a repeated `If-Match` or
 * `Idempotency-Key` into one, so a row never sees them as an array.
 */

/** A schema's sample values: the first is the base, the others its variants. */
export function samples(s: ZodTypeAny | undefined, name: string): unknown[] {
  if (!s) return [`s:${name}`];
  const def = (s as { _def: Record<string, any> })._def;
  switch (def.typeName) {
    case 'ZodString':
      return [`s:${name}`];
    case 'ZodNumber':
    case 'ZodBigInt':
      return [7];
    case 'ZodBoolean':
      return [true, false];
    case 'ZodDate':
      return [new Date(0)];
    case 'ZodNull':
      return [null];
    case 'ZodLiteral':
      return [def.value];
    case 'ZodEnum':
      return [...def.values];
    case 'ZodNativeEnum':
      return Object.values(def.values);
    case 'ZodAny':
    case 'ZodUnknown':
      return [{ free_key: `s:${name}`, camelKey: 1 }];
    case 'ZodRecord':
      return [{ free_key: samples(def.valueType, name)[0], camelKey: samples(def.valueType, name)[0] }];
    case 'ZodArray':
      return [...samples(def.type, name).map((x) => [x]), []];
    case 'ZodTuple':
      return [(def.items as ZodTypeAny[]).map((x, i) => samples(x, `${name}.${i}`)[0])];
    case 'ZodObject':
      return objectSamples(def.shape() as Record<string, ZodTypeAny>);
    case 'ZodUnion':
    case 'ZodDiscriminatedUnion':
      return (def.options as ZodTypeAny[]).flatMap((o) => samples(o, name));
    case 'ZodIntersection':
      return [{ ...(samples(def.left, name)[0] as object), ...(samples(def.right, name)[0] as object) }];
    case 'ZodOptional':
    case 'ZodDefault':
    case 'ZodReadonly':
    case 'ZodCatch':
    case 'ZodBranded':
      return samples(def.innerType ?? def.type, name);
    case 'ZodNullable':
      return [...samples(def.innerType, name), null];
    case 'ZodEffects':
      return samples(def.schema, name);
    case 'ZodPipeline':
      return samples(def.in, name);
    case 'ZodLazy':
      return samples(def.getter(), name);
    default:
      return [`s:${name}`];
  }
}

/** An object with every key at its base value, then each key in turn absent or at each of its variants. */
function objectSamples(shape: Record<string, ZodTypeAny>): Record<string, unknown>[] {
  const keys = Object.entries(shape).map(([k, s]) => [k, samples(s, k)] as const);
  const base = Object.fromEntries(keys.map(([k, v]) => [k, v[0]]));
  const out: Record<string, unknown>[] = [base];
  for (const [k, values] of keys) {
    const { [k]: _, ...without } = base;
    out.push(without);
    for (const v of values.slice(1)) out.push({ ...base, [k]: v });
  }
  return out;
}

const HEADERS: RouteRequest['headers'][] = [
  {},
  { 'if-match': '"3"', 'idempotency-key': 'key-1' },
  { 'if-match': '', 'idempotency-key': '' },
];

/** The sample requests of a row, in a fixed order. */
export function sampleRequests(r: AreaRoute): RouteRequest[] {
  const params = Object.fromEntries(pathParams(r.path).map((p) => [p, `p:${p}`]));
  const bodies: unknown[] = r.body ? samples(r.body as ZodTypeAny, 'body') : [undefined];
  const queries = (r.query ? samples(r.query as ZodTypeAny, 'query') : [{}]) as Record<string, unknown>[];
  const at = (body: unknown, query: Record<string, unknown>, headers = HEADERS[0], ip = '203.0.113.9') => ({
    params,
    query,
    body,
    headers,
    ip,
  });
  return [
    ...bodies.map((b) => at(b, queries[0])),
    ...queries.slice(1).map((q) => at(bodies[0], q)),
    ...HEADERS.slice(1).map((h) => at(bodies[0], queries[0], h)),
    at(bodies[0], queries[0], HEADERS[0], ''),
  ];
}

/** A value as one line of JSON with its keys sorted, an `undefined` value kept (JSON would drop it). */
function line(v: unknown): string {
  const sorted = (x: unknown): unknown => {
    if (x === undefined) return '<undefined>';
    if (Array.isArray(x)) return x.map(sorted);
    if (x && typeof x === 'object' && !(x instanceof Date)) {
      return Object.fromEntries(
        Object.keys(x)
          .sort()
          .map((k) => [k, sorted((x as Record<string, unknown>)[k])]),
      );
    }
    return x;
  };
  return JSON.stringify(sorted(v));
}

/** What a row gives for a request: its variables, or the error its mapping throws. */
function outcome(r: AreaRoute, req: RouteRequest): string {
  try {
    return line(variablesOf(r, req));
  } catch (e) {
    return `thrown: ${(e as Error).message}`;
  }
}

const routes = areaRoutes();

describe('every row gives the same variables for the same request', () => {
  it('covers every row once', () => {
    expect(routes.length).toBeGreaterThan(100);
    expect(new Set(routes.map((r) => `${r.method} ${r.path}`)).size).toBe(routes.length);
  });

  it.each(routes.map((r) => [`${r.method} ${r.path}`, r] as const))('%s', (_, r) => {
    expect(sampleRequests(r).map((req) => outcome(r, req))).toMatchSnapshot();
  });
});
