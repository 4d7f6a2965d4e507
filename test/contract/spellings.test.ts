import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  buildSchema,
  type GraphQLInputType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  Kind,
  type OperationDefinitionNode,
  parse,
  specifiedScalarTypes,
  typeFromAST,
  visit,
} from 'graphql';
import type { ZodTypeAny } from 'zod';
import { areaRoutes } from '../../app/areas';
import { projectRoot } from '../../core/paths';
import { type AreaRoute, pathParams, variablesOf } from '../../core/rest-route';
import { camelCase, camelKeys, snakeCase } from '../../core/field-names';

/**
 * A route's field is spelled in four places: the zod body (snake_case), the `variables` mapping,
 * the type-graphql input class (camelCase) and the document's alias (snake_case). This test keeps
 * the four in agreement for every row (docs/decisions/0190-field-spellings.md):
 * - every key of a row's zod body reaches the operation's variables, at a path that names a
 *   declared variable or a field of its GraphQL input type, spelled camelCase(key);
 * - every path parameter reaches a declared variable (decision 0370);
 * - every key the `variables` mapping writes is a declared variable or an input field;
 * - every alias in a document is snake_case(field).
 * The exceptions are listed below, each with its reason.
 */
const schema = buildSchema(readFileSync(path.join(projectRoot(), 'schema', 'supergraph.graphql'), 'utf8'), {
  assumeValid: true,
});
const routes = areaRoutes();
const rowName = (r: AreaRoute) => `${r.method} ${r.path}`;

/** The top-level keys of a body schema (objects, through effects, optionals, unions and intersections). */
export function bodyKeys(s: ZodTypeAny | undefined): string[] {
  if (!s) return [];
  const def = (s as { _def: Record<string, any> })._def;
  switch (def.typeName) {
    case 'ZodObject':
      return Object.keys(def.shape());
    case 'ZodEffects':
      return bodyKeys(def.schema);
    case 'ZodOptional':
    case 'ZodNullable':
    case 'ZodDefault':
    case 'ZodReadonly':
      return bodyKeys(def.innerType);
    case 'ZodPipeline':
      return bodyKeys(def.in);
    case 'ZodUnion':
    case 'ZodDiscriminatedUnion':
      return [...new Set((def.options as ZodTypeAny[]).flatMap(bodyKeys))];
    case 'ZodIntersection':
      return [...new Set([...bodyKeys(def.left), ...bodyKeys(def.right)])];
    case 'ZodLazy':
      return bodyKeys(def.getter());
    default:
      return [];
  }
}

const MARK = '\u2063mark:';
const candidates = (key: string): unknown[] => [`${MARK}${key}`, [`${MARK}${key}`], { [MARK]: key }, 1, true];

function paramsOf(p: string): Record<string, string> {
  return Object.fromEntries(
    [...p.matchAll(/\{(\w+)\}/g)].map((m) => [m[1], `00000000-0000-4000-8000-00000000000${m[1].length % 10}`]),
  );
}

function run(r: AreaRoute, body: Record<string, unknown>, params = paramsOf(r.path)): Record<string, unknown> | Error {
  try {
    return variablesOf(r, { params, query: {}, body, headers: {}, ip: '127.0.0.1' });
  } catch (e) {
    return e as Error;
  }
}

/** Paths (from the variables' root) where a value carries the marker of `key`. */
function findMark(v: unknown, key: string, at: string[] = []): string[][] {
  if (typeof v === 'string') return v.includes(`${MARK}${key}`) ? [at] : [];
  if (Array.isArray(v)) return v.flatMap((x) => findMark(x, key, at));
  if (v && typeof v === 'object') {
    if ((v as Record<string, unknown>)[MARK] === key) return [at];
    return Object.entries(v).flatMap(([k, x]) => findMark(x, key, [...at, k]));
  }
  return [];
}

function operationOf(r: AreaRoute): OperationDefinitionNode {
  const doc = parse(r.document);
  return doc.definitions.find((d) => d.kind === Kind.OPERATION_DEFINITION) as OperationDefinitionNode;
}

/** The input type each variable of the operation takes. */
function variableTypes(r: AreaRoute): Map<string, GraphQLInputType> {
  const out = new Map<string, GraphQLInputType>();
  for (const v of operationOf(r).variableDefinitions ?? []) {
    out.set(v.variable.name.value, typeFromAST(schema, v.type as any) as GraphQLInputType);
  }
  return out;
}

/** Resolves a path of the variables against the operation: null when a segment names nothing. */
function resolve(vars: Map<string, GraphQLInputType>, p: string[]): string | null {
  let type: GraphQLInputType | undefined = vars.get(p[0]);
  if (!type) return null;
  for (const seg of p.slice(1)) {
    while (isNonNullType(type) || isListType(type)) type = (type as any).ofType as GraphQLInputType;
    // A JSON scalar (a transformation's definition, say) is opaque: the service parses it.
    if (!isInputObjectType(type)) return isScalarType(type) && !specifiedScalarTypes.includes(type) ? p[p.length - 1] : null;
    const field: { type: GraphQLInputType } | undefined = type.getFields()[seg];
    if (!field) return null;
    type = field.type;
  }
  return p[p.length - 1];
}

/** Every key the variables hold resolves to a declared variable or an input field. */
function unknownKeys(vars: Map<string, GraphQLInputType>, v: Record<string, unknown>): string[] {
  const out: string[] = [];
  const walk = (value: unknown, type: GraphQLInputType | undefined, at: string) => {
    let t = type;
    while (t && (isNonNullType(t) || isListType(t))) t = (t as any).ofType;
    if (Array.isArray(value)) return value.forEach((x) => walk(x, t, at));
    if (!t || !isInputObjectType(t) || !value || typeof value !== 'object') return;
    const fields = t.getFields();
    for (const [k, x] of Object.entries(value)) {
      if (k === MARK) continue;
      if (!fields[k]) out.push(`${at}.${k}`);
      else walk(x, fields[k].type, `${at}.${k}`);
    }
  };
  for (const [k, x] of Object.entries(v)) {
    if (!vars.has(k)) out.push(k);
    else walk(x, vars.get(k), k);
  }
  return out;
}

/**
 * Body keys the tracer cannot follow, each with its reason; their values still go through the
 * unknown-key walk where the row's mapping runs.
 */
const UNTRACED: Record<string, { keys: string[]; why: string }> = {
  'POST /api/v1/assets/transformations': {
    keys: ['version', 'definition', 'eager', 'fit', 'gravity'],
    why: 'the legacy flat form becomes one resize operation and `eager` is `{ enabled }`: the body is reshaped, not renamed',
  },
  'POST /api/v1/assets/bulk': { keys: ['items'], why: 'each item is mapped on its own (asset_id → assetId)' },
};

/** Body keys that reach a field of another name, each with its reason. */
const RENAMED: Record<string, Record<string, { to: string; why: string }>> = {
  'PUT /api/v1/assets/buckets/{bucketID}/storage': {
    revision: { to: 'ifMatch', why: 'the body revision and the If-Match header feed one precondition argument' },
  },
};

/** Aliases that are not snake_case(field): the spec's REST names differ from the GraphQL ones. */
const ALIASES: Record<string, string> = {
  checksum_sha256: 'checksum',
  part_number: 'number',
  job_id: 'id',
  deleted: 'deleteAssetTransformation',
};

/** Every disagreement between a row's spellings, one line each (empty when all agree). */
export function spellingProblems(rows: readonly AreaRoute[]): string[] {
  const problems: string[] = [];
  for (const r of rows) {
    const vars = variableTypes(r);
    const untraced = new Set(UNTRACED[rowName(r)]?.keys ?? []);
    const outputs: Record<string, unknown>[] = [];
    const empty = run(r, {});
    if (!(empty instanceof Error)) outputs.push(empty);
    for (const key of bodyKeys(r.body as ZodTypeAny | undefined)) {
      let paths: string[][] = [];
      for (const c of candidates(key)) {
        const out = run(r, { [key]: c });
        if (out instanceof Error) continue;
        outputs.push(out);
        paths = findMark(out, key);
        if (paths.length) break;
      }
      if (!paths.length) {
        if (!untraced.has(key)) problems.push(`${rowName(r)}: body key ${key} reaches no variable`);
        continue;
      }
      for (const p of paths) {
        const name = resolve(vars, p);
        const renamed = RENAMED[rowName(r)]?.[key]?.to;
        if (name === null)
          problems.push(`${rowName(r)}: body key ${key} lands on ${p.join('.')}, which the operation does not declare`);
        else if (name !== camelCase(key) && name !== renamed) {
          problems.push(`${rowName(r)}: body key ${key} is spelled ${name} in GraphQL (expected ${camelCase(key)})`);
        }
      }
    }
    for (const name of pathParams(r.path)) {
      // A path parameter reaches a declared variable (by rule, `derive.params`, or by the mapping).
      const out = run(r, {}, { ...paramsOf(r.path), [name]: `${MARK}{${name}}` });
      const paths = out instanceof Error ? [] : findMark(out, `{${name}}`);
      if (!paths.length) problems.push(`${rowName(r)}: path parameter ${name} reaches no variable`);
      for (const p of paths) {
        if (resolve(vars, p) === null)
          problems.push(`${rowName(r)}: path parameter ${name} lands on ${p.join('.')}, which the operation does not declare`);
      }
    }
    for (const out of outputs) {
      for (const k of unknownKeys(vars, out)) problems.push(`${rowName(r)}: variable ${k} is not declared by ${r.operation}`);
    }
    visit(parse(r.document), {
      Field(node) {
        const alias = node.alias?.value;
        if (alias && alias !== snakeCase(node.name.value) && ALIASES[alias] !== node.name.value) {
          problems.push(
            `${r.area}/${r.operation}: alias ${alias} of ${node.name.value} (expected ${snakeCase(node.name.value)})`,
          );
        }
      },
    });
  }
  return [...new Set(problems)];
}

describe('field spellings agree (zod body, variables, GraphQL input, document alias)', () => {
  it('for every row of every area', () => {
    expect(routes.length).toBeGreaterThan(100);
    expect(spellingProblems(routes)).toEqual([]);
  });

  it('catch a mapping that misspells an input field, drops a body key or a path parameter, or renames an alias', () => {
    const row = routes.find((r) => r.operation === 'create-event-subscription' && r.area === 'objstore');
    if (!row) throw new Error('objstore create row missing');
    const misspelled: AreaRoute = {
      ...row,
      variables: (req) => {
        const v = variablesOf(row, req) as { input: Record<string, unknown> };
        const { deliveryMode, ...rest } = v.input;
        return { ...v, input: { ...rest, delivery_mode: deliveryMode } };
      },
    };
    expect(spellingProblems([misspelled])).toEqual(
      expect.arrayContaining([expect.stringMatching(/body key delivery_mode lands on input\.delivery_mode/)]),
    );
    const dropped: AreaRoute = { ...row, variables: (req) => ({ ...variablesOf(row, req), input: {} }) };
    expect(spellingProblems([dropped])).toEqual(
      expect.arrayContaining([expect.stringMatching(/body key url reaches no variable/)]),
    );
    const unmapped: AreaRoute = { ...row, derive: { body: 'input' }, variables: undefined };
    expect(spellingProblems([unmapped])).toEqual(
      expect.arrayContaining([expect.stringMatching(/path parameter bucketID reaches no variable/)]),
    );
    const aliased: AreaRoute = { ...row, document: row.document.replace(/\bdelivery_mode:/, 'mode:') };
    expect(row.document).not.toEqual(aliased.document);
    expect(spellingProblems([aliased])).toEqual(expect.arrayContaining([expect.stringMatching(/alias mode of deliveryMode/)]));
  });

  it('derive the GraphQL spelling from the REST one (core/field-names.ts)', () => {
    expect(camelCase('delivery_mode')).toBe('deliveryMode');
    expect(camelCase('checksum_sha256')).toBe('checksumSha256');
    expect(snakeCase('rotateSecret')).toBe('rotate_secret');
    expect(camelKeys({ rotate_secret: true, enabled: undefined, url: 'u' })).toEqual({ rotateSecret: true, url: 'u' });
  });
});
