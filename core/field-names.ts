/**
 * The two spellings of one field: the REST face's snake_case (`delivery_mode`) and the GraphQL
 * face's camelCase (`deliveryMode`). A row derives the second from the first instead of spelling
 * it again (docs/decisions/0190-field-spellings.md); `test/contract/spellings.test.ts` checks that
 * every row's spellings agree.
 */

/** `delivery_mode` → `deliveryMode` (digits and existing capitals are kept). */
export function camelCase(snake: string): string {
  return snake.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/**
 * A path parameter's GraphQL spelling: `{projectID}` → `projectId`, `{runId}` → `runId` (a trailing
 * `ID` reads `Id`, as the variables of `npm run new:route` are named).
 */
export function paramName(param: string): string {
  return camelCase(param).replace(/ID$/, 'Id');
}

/**
 * A request header's GraphQL spelling: `If-Match` → `ifMatch`, `Idempotency-Key` → `idempotencyKey`
 * (lower case, each word after a hyphen capitalised).
 */
export function headerName(header: string): string {
  return camelCase(header.toLowerCase().replace(/-/g, '_'));
}

/** `deliveryMode` → `delivery_mode`. */
export function snakeCase(camel: string): string {
  return camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

type Camel<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;

/** A parsed REST body with its top-level keys in camelCase: the GraphQL input it becomes. */
export type CamelKeys<T> = { [K in keyof T as K extends string ? Camel<K> : K]: T[K] };

/**
 * A REST body (already parsed by its strict zod schema) as the GraphQL input of its operation: each
 * top-level key in camelCase, values unchanged, absent keys absent.
 */
export function camelKeys<T extends Record<string, unknown>>(body: T | undefined): CamelKeys<T> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body ?? {})) if (v !== undefined) out[camelCase(k)] = v;
  return out as CamelKeys<T>;
}
