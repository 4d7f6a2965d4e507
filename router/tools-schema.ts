import { type ApolloServerPlugin, HeaderMap } from '@apollo/server';
import {
  type DefinitionNode,
  type DocumentNode,
  execute,
  extendSchema,
  type GraphQLSchema,
  Kind,
  type OperationDefinitionNode,
  OperationTypeNode,
  parse,
} from 'graphql';
import type { FeedDefinition } from '../core/area';
import { subscriptionSdl } from './subscriptions';

type AnyFeed = FeedDefinition<unknown, Record<string, unknown>>;

/**
 * The whole schema a tool sees (docs/decisions/0280-console-sessions.md): the gateway's API schema
 * (queries, mutations) with the graphql-ws feeds' `Subscription` type and its types, which the
 * router serves on the same path. What introspection answers and `schema/schema.graphql` holds.
 */
export function toolsSchema(api: GraphQLSchema, feeds: readonly AnyFeed[]): GraphQLSchema {
  if (feeds.length === 0) return api;
  const own = parse(subscriptionSdl(feeds));
  // The feeds' placeholder `Query` stays out: the gateway's is the real one.
  const definitions: DefinitionNode[] = own.definitions.filter(
    (d) => !('name' in d && d.name?.value === 'Query' && d.kind === Kind.OBJECT_TYPE_DEFINITION),
  );
  definitions.push({
    kind: Kind.SCHEMA_EXTENSION,
    operationTypes: [
      {
        kind: Kind.OPERATION_TYPE_DEFINITION,
        operation: OperationTypeNode.SUBSCRIPTION,
        type: { kind: Kind.NAMED_TYPE, name: { kind: Kind.NAME, value: 'Subscription' } },
      },
    ],
  });
  return extendSchema(api, { kind: Kind.DOCUMENT, definitions });
}

/** An operation that asks only about the schema (`__schema`, `__type`, `__typename` at its root). */
export function isIntrospectionOnly(operation: OperationDefinitionNode | undefined): boolean {
  return (
    operation?.operation === 'query' &&
    operation.selectionSet.selections.length > 0 &&
    operation.selectionSet.selections.every((s) => s.kind === Kind.FIELD && s.name.value.startsWith('__'))
  );
}

/**
 * Introspection answers the whole schema: an introspection-only query is executed on the tools
 * schema (built once per gateway schema) instead of the gateway, which knows no subscriptions.
 * Validation (and production's refusal of introspection) has run before, as for any operation.
 */
export function wholeSchemaIntrospection(feeds: readonly AnyFeed[]): ApolloServerPlugin {
  const built = new WeakMap<GraphQLSchema, GraphQLSchema>();
  return {
    async requestDidStart() {
      return {
        async responseForOperation(ctx) {
          if (!isIntrospectionOnly(ctx.operation)) return null;
          let schema = built.get(ctx.schema);
          if (!schema) built.set(ctx.schema, (schema = toolsSchema(ctx.schema, feeds)));
          const result = await execute({
            schema,
            document: ctx.document as DocumentNode,
            operationName: ctx.operationName,
            variableValues: ctx.request.variables,
          });
          return { http: { status: undefined, headers: new HeaderMap() }, body: { kind: 'single', singleResult: result } };
        },
      };
    },
  };
}
