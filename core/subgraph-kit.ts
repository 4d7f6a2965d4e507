import { buildSubgraphSchema } from '@apollo/subgraph';
import type { GraphQLResolverMap } from '@apollo/subgraph/dist/schema-helper/resolverMap';
import { printSchemaWithDirectives } from '@graphql-tools/utils';
import { type GraphQLSchema, parse } from 'graphql';
import { buildSchema, createResolversMap, type NonEmptyArray } from 'type-graphql';
import { ForgedPrincipalError, type Principal, PRINCIPAL_HEADER, verifyPrincipal } from './principal';

/** Federation spec version every subgraph links to. */
export const FEDERATION_LINK =
  'extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key", "@shareable", "@external", "@requires", "@provides", "@inaccessible"])';

/** What every resolver sees in its context. */
export interface RequestContext {
  principal: Principal | null;
  requestId: string;
}

/**
 * Builds the resolver context of subgraph `audience` from request headers; throws when the
 * principal header is forged, stale, or signed for another subgraph or request id.
 */
export function contextFromHeaders(headers: Record<string, string | string[] | undefined>, audience: string): RequestContext {
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const requestId = first(headers['x-request-id']);
  if (!requestId) throw new ForgedPrincipalError('missing request id');
  const principal = verifyPrincipal(first(headers[PRINCIPAL_HEADER]), { audience, requestId });
  return { principal, requestId };
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
}

export interface BuiltSubgraph {
  name: string;
  /** The executable federated schema. */
  schema: GraphQLSchema;
  /** The subgraph SDL as composition sees it. */
  sdl: string;
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
  for (const [typeName, extra] of Object.entries(def.referenceResolvers ?? {})) {
    resolvers[typeName] = { ...(resolvers[typeName] as object), ...(extra as object) } as never;
  }
  const schema = buildSubgraphSchema({ typeDefs: parse(sdl), resolvers: resolvers as GraphQLResolverMap<unknown> });
  return { name: def.name, schema, sdl };
}
