import { buildSubgraphSchema } from '@apollo/subgraph';
import type { GraphQLResolverMap } from '@apollo/subgraph/dist/schema-helper/resolverMap';
import { printSchemaWithDirectives } from '@graphql-tools/utils';
import { type GraphQLFieldResolver, GraphQLScalarType, type GraphQLSchema, parse } from 'graphql';
import { type AuthChecker, buildSchema, createResolversMap, getMetadataStorage, type NonEmptyArray } from 'type-graphql';
import { badRequest, isPlatformError, type PlatformError } from './errors';
import { isoDateSerializer } from './graphql-dates';
import type { AreaScopes } from './scopes';
import {
  ForgedPrincipalError,
  type Principal,
  PRINCIPAL_HEADER,
  requirePrincipal,
  requireScope,
  verifySigned,
} from './principal';

/** Federation spec version every subgraph links to. */
export const FEDERATION_LINK =
  'extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key", "@shareable", "@external", "@requires", "@provides", "@inaccessible"])';

/** What every resolver sees in its context. */
export interface RequestContext {
  principal: Principal | null;
  requestId: string;
  /**
   * The caller's address as the edge (bridge or router) saw it: the socket's, or a trusted proxy's
   * X-Forwarded-For (TRUST_PROXY). Signed with the principal; never taken from an argument.
   */
  clientIp?: string;
}

/**
 * Builds the resolver context of subgraph `audience` from request headers; throws when the
 * principal header is forged, stale, or signed for another subgraph or request id.
 */
export function contextFromHeaders(headers: Record<string, string | string[] | undefined>, audience: string): RequestContext {
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const requestId = first(headers['x-request-id']);
  if (!requestId) throw new ForgedPrincipalError('missing request id');
  const { principal, clientIp } = verifySigned(first(headers[PRINCIPAL_HEADER]), { audience, requestId });
  return { principal, requestId, clientIp };
}

type ResolverClass = new (...args: any[]) => object;

export interface SubgraphDefinition {
  /** Name in the supergraph, e.g. `publisher`. */
  name: string;
  resolvers: NonEmptyArray<ResolverClass>;
  /** Types reachable only as entities (e.g. a `Project` stub that only gains fields here). */
  orphanedTypes?: ResolverClass[];
  /** `{ Project: { __resolveReference(ref, ctx) {…} } }` */
  referenceResolvers?: GraphQLResolverMap<RequestContext>;
  /** Builds a resolver instance with the subgraph's services (one instance per class). */
  createResolver: (cls: ResolverClass) => object;
  /**
   * Who may call each root field not declared with `@Authorized`, by `Query.name` / `Mutation.name`
   * (the composition root fills it from the REST rows: a row's scope, or `public`).
   */
  fieldAccess?: Record<string, FieldAccess>;
  /** The area's default scopes (see `areaScopes`): the composition root fills them from the area name. */
  scopes?: AreaScopes;
  /** Shapes a kernel refusal (401/403) in the area's own codes, e.g. commerce's `COMMERCE_` prefix. */
  refusal?: (e: PlatformError) => Error;
}

/**
 * Who may call a root field: anyone (`public`), any valid key (`key`), or a key carrying a scope.
 * Every root field has one, decided once here (default deny): `@Authorized(scope)` on the resolver,
 * else the scope of the REST row that runs it, else the area's read scope for a query and write
 * scope for a mutation. A field with none of these fails the build.
 */
export type FieldAccess = 'public' | 'key' | { scope: string };

/** `@Authorized(...)` of a resolver method: `key` when it names no scope. */
function authorizedAccess(resolvers: readonly ResolverClass[], field: string): FieldAccess | undefined {
  const found = getMetadataStorage().authorizedFields.find(
    (a) => a.fieldName === field && resolvers.some((cls) => cls === a.target || cls.prototype instanceof a.target),
  );
  if (!found) return undefined;
  return found.roles.length === 0 ? 'key' : { scope: String(found.roles[0]) };
}

/** The access rule of root field `Query.name` / `Mutation.name` of a subgraph definition (see FieldAccess). */
export function rootFieldAccess(
  def: Pick<SubgraphDefinition, 'resolvers' | 'fieldAccess' | 'scopes'> & { name?: string },
  operation: 'Query' | 'Mutation',
  field: string,
): FieldAccess {
  const declared = authorizedAccess(def.resolvers, field) ?? def.fieldAccess?.[`${operation}.${field}`];
  if (declared) return declared;
  if (def.scopes) return { scope: operation === 'Query' ? def.scopes.read : def.scopes.write };
  throw new Error(`${def.name ?? 'a subgraph'}: ${operation}.${field} declares no scope (add @Authorized or a REST row scope)`);
}

/** Checks a principal against an access rule: 401 without a key, 403 without the scope. */
export function checkAccess(access: FieldAccess, principal: Principal | null | undefined): void {
  if (access === 'public') return;
  requirePrincipal(principal);
  if (access !== 'key') requireScope(principal, access.scope);
}

type AnyResolver = GraphQLFieldResolver<unknown, RequestContext>;

function guarded(resolve: AnyResolver, access: FieldAccess, refusal?: (e: PlatformError) => Error): AnyResolver {
  return (root, args, ctx, info) => {
    try {
      checkAccess(access, ctx.principal);
    } catch (e) {
      throw refusal && isPlatformError(e) ? refusal(e) : e;
    }
    return resolve(root, args, ctx, info);
  };
}

export interface BuiltSubgraph {
  name: string;
  /** The executable federated schema. */
  schema: GraphQLSchema;
  /** The subgraph SDL as composition sees it. */
  sdl: string;
  /** Who may call each root field, by `Query.name` / `Mutation.name` (see FieldAccess). */
  access: Record<string, FieldAccess>;
}

/**
 * `@Authorized('publisher:write')` on a resolver field: the caller's key must carry every scope
 * named, else 401 (no key) or 403 `insufficient_scope`. Checked inside the subgraph, so neither the
 * bridge nor a direct GraphQL client can bypass it.
 */
export const scopeAuthChecker: AuthChecker<RequestContext> = ({ context }, scopes) => {
  requirePrincipal(context.principal);
  for (const scope of scopes) requireScope(context.principal, scope);
  return true;
};

/**
 * A JSON literal as a plain object: graphql-scalars parses an inline object literal
 * (`metadata: {}`) into a prototype-less object, which type-graphql's argument validation cannot
 * handle (a 500 for any client). Keys are defined, never assigned, so a `__proto__` key stays an
 * own property exactly as `JSON.parse` would leave it.
 */
export function plainJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(plainJson);
  if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    Object.defineProperty(out, k, { value: plainJson(v), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/**
 * A JSON value the database can store: an object key holding a NUL character cannot be written
 * (the BSON serializer throws, a 500 for any client), so it is refused as bad input, at any depth,
 * on every transport (the REST bridge sends bodies as variables).
 */
export function storableJson<T>(value: T): T {
  const walk = (v: unknown, path: string): void => {
    if (Array.isArray(v)) return v.forEach((x, i) => walk(x, `${path}[${i}]`));
    if (v === null || typeof v !== 'object') return;
    for (const [k, x] of Object.entries(v)) {
      if (k.includes('\0')) {
        throw badRequest('forbidden_json_key', `${path || 'the value'} has a key with a NUL character, which cannot be stored`);
      }
      walk(x, path ? `${path}.${k}` : k);
    }
  };
  walk(value, '');
  return value;
}

/**
 * A custom scalar whose inline literals parse to plain objects (see plainJson) and whose values are
 * storable (storableJson); `DateTimeISO` writes Dates with isoDateSerializer.
 */
function withPlainLiterals(scalar: GraphQLScalarType): GraphQLScalarType {
  const config = scalar.toConfig();
  const { parseLiteral, parseValue } = config;
  return new GraphQLScalarType({
    ...config,
    // Dates written without toISOString, to the same string (decision 0314).
    ...(config.name === 'DateTimeISO' ? { serialize: isoDateSerializer(config.serialize) } : {}),
    parseValue: (value) => storableJson(parseValue ? parseValue(value) : value),
    parseLiteral: parseLiteral ? (ast, variables) => storableJson(plainJson(parseLiteral(ast, variables))) : undefined,
  });
}

/**
 * type-graphql classes → SDL with directives + federation @link → `buildSubgraphSchema`.
 * type-graphql's own schema check is skipped because entity stubs have no root field here.
 */
export async function buildSubgraph(def: SubgraphDefinition): Promise<BuiltSubgraph> {
  const instances = new Map<ResolverClass, object>();
  const typeGraphqlSchema = await buildSchema({
    resolvers: def.resolvers,
    orphanedTypes: def.orphanedTypes,
    skipCheck: true,
    validate: { forbidUnknownValues: false },
    authChecker: scopeAuthChecker,
    container: {
      get: (cls: ResolverClass) => {
        let instance = instances.get(cls);
        if (!instance) {
          instance = def.createResolver(cls);
          instances.set(cls, instance);
        }
        return instance;
      },
    },
  });
  const sdl = `${FEDERATION_LINK}\n\n${printSchemaWithDirectives(typeGraphqlSchema)}`;
  const resolvers = createResolversMap(typeGraphqlSchema) as GraphQLResolverMap<RequestContext>;
  for (const [name, value] of Object.entries(resolvers)) {
    if (value instanceof GraphQLScalarType) resolvers[name] = withPlainLiterals(value) as never;
  }
  // Every root field is guarded by its declared access; `@Authorized` ones by type-graphql already.
  const accessOf: Record<string, FieldAccess> = {};
  for (const operation of ['Query', 'Mutation'] as const) {
    const type = operation === 'Query' ? typeGraphqlSchema.getQueryType() : typeGraphqlSchema.getMutationType();
    const map = resolvers[operation] as Record<string, AnyResolver> | undefined;
    for (const field of Object.keys(type?.getFields() ?? {})) {
      const access = rootFieldAccess(def, operation, field);
      accessOf[`${operation}.${field}`] = access;
      if (authorizedAccess(def.resolvers, field) || !map?.[field]) continue;
      map[field] = guarded(map[field], access, def.refusal);
    }
  }
  for (const [typeName, extra] of Object.entries(def.referenceResolvers ?? {})) {
    resolvers[typeName] = { ...(resolvers[typeName] as object), ...(extra as object) } as never;
  }
  const schema = buildSubgraphSchema({ typeDefs: parse(sdl), resolvers: resolvers as GraphQLResolverMap<unknown> });
  // Fields this subgraph adds to another area's entity (`Project.site`) are reached only through
  // `_entities`: they need the area's read scope, like its queries.
  const entities = schema.getQueryType()?.getFields()._entities;
  if (entities?.resolve && def.scopes) {
    entities.resolve = guarded(entities.resolve as AnyResolver, { scope: def.scopes.read }, def.refusal) as never;
  }
  return { name: def.name, schema, sdl, access: accessOf };
}
