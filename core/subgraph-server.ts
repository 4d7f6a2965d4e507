import { ApolloServer, type ApolloServerOptionsWithGateway, type ApolloServerPlugin } from '@apollo/server';
import { ApolloServerPluginCacheControl } from '@apollo/server/plugin/cacheControl';
import { ApolloServerPluginCacheControlDisabled, ApolloServerPluginInlineTraceDisabled } from '@apollo/server/plugin/disabled';
import fastifyApollo, { fastifyApolloDrainPlugin } from '@as-integrations/fastify';
import Fastify from 'fastify';
import { installAccessLog } from './access-log';
import { installMetricsRoute } from './telemetry/http';
import { closeListener } from './http-close';
import { GraphQLError, type GraphQLSchema } from 'graphql';
import { executeDocument } from './compiled-execution';
import { formatPlatformError } from './graphql-errors';
import type { Logger } from './logger';
import { ForgedPrincipalError } from './principal';
import { type BuiltSubgraph, contextFromHeaders, type RequestContext } from './subgraph-kit';

/**
 * Body limit of a GraphQL request between processes (bridge → router, router → subgraph): a REST
 * row's body arrives as variables, and the largest rows take 4 MiB (a 10,000-item bulk job);
 * Fastify's 1 MiB default refused them whenever the roles ran apart.
 */
export const GRAPHQL_BODY_LIMIT = 8 * 1024 * 1024;

export interface RunningServer {
  url: string;
  close(): Promise<void>;
}

/**
 * The subgraph's schema handed to Apollo Server as a fixed "gateway": Apollo Server 4+ takes an
 * executor only from a gateway, and this one runs each query compiled (executeDocument, decision
 * 0345). Parsing, validation, the document store, plugins and error formatting stay Apollo Server's.
 */
function compiledGateway(schema: GraphQLSchema, sdl: string): ApolloServerOptionsWithGateway<RequestContext>['gateway'] {
  return {
    onSchemaLoadOrUpdate: (callback) => {
      callback({ apiSchema: schema, coreSupergraphSdl: sdl });
      return () => {};
    },
    load: async () => ({
      schema,
      executor: (request) =>
        executeDocument({
          schema,
          document: request.document,
          source: request.source,
          variableValues: request.request.variables,
          operationName: request.operationName,
          contextValue: request.context,
        }),
    }),
    stop: async () => {},
  };
}

/**
 * Apollo Server's cache-control plugin, or (switch on) only the header it always writes here: no
 * type or field of a subgraph has a cache hint, so every answer is `cache-control: no-store`; the
 * plugin would still build a cache policy per resolved field to find that out (decision 0345).
 */
export const fixedCacheControl = { enabled: true };

function subgraphCacheControl(): ApolloServerPlugin<RequestContext> {
  const full = ApolloServerPluginCacheControl() as ApolloServerPlugin<RequestContext>;
  return {
    serverWillStart: async (service) => full.serverWillStart?.(service),
    requestDidStart: async (requestContext) => {
      if (!fixedCacheControl.enabled) return full.requestDidStart?.(requestContext);
      return {
        willSendResponse: async ({ response }) => {
          response.http.headers.set('cache-control', 'no-store');
        },
      };
    },
  };
}

/** Serves one subgraph as its own Apollo Server over HTTP (`POST /graphql`). */
export async function serveSubgraph(
  subgraph: BuiltSubgraph,
  opts: { host: string; port: number; log: Logger },
): Promise<RunningServer> {
  const app = Fastify({ logger: false, bodyLimit: GRAPHQL_BODY_LIMIT });
  installAccessLog(app, opts.log, `subgraph:${subgraph.name}`);
  const apollo = new ApolloServer<RequestContext>({
    gateway: compiledGateway(subgraph.schema, subgraph.sdl),
    plugins: [
      ApolloServerPluginInlineTraceDisabled(),
      ApolloServerPluginCacheControlDisabled(),
      subgraphCacheControl(),
      fastifyApolloDrainPlugin(app),
    ],
    formatError: (formatted, error) => formatPlatformError(formatted, error, opts.log),
    includeStacktraceInErrorResponses: false,
  });
  await apollo.start();
  await app.register(fastifyApollo(apollo), {
    path: '/graphql',
    context: async (request) => {
      try {
        return contextFromHeaders(request.headers, subgraph.name);
      } catch (e) {
        if (e instanceof ForgedPrincipalError) {
          opts.log.warn({ subgraph: subgraph.name, reason: e.message }, 'refused a request without a valid principal');
          throw new GraphQLError('request refused: missing or invalid principal signature', {
            extensions: { code: 'forbidden', status: 403, http: { status: 403 } },
          });
        }
        throw e;
      }
    },
  });
  installMetricsRoute(app);
  const address = await app.listen({ host: opts.host, port: opts.port });
  return {
    url: `${address}/graphql`,
    close: async () => {
      await closeListener(app);
    },
  };
}
