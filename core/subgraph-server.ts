import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginInlineTraceDisabled } from '@apollo/server/plugin/disabled';
import fastifyApollo, { fastifyApolloDrainPlugin } from '@as-integrations/fastify';
import Fastify from 'fastify';
import { installAccessLog } from './access-log';
import { installMetricsRoute } from './telemetry/http';
import { closeListener } from './http-close';
import { GraphQLError } from 'graphql';
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

/** Serves one subgraph as its own Apollo Server over HTTP (`POST /graphql`). */
export async function serveSubgraph(
  subgraph: BuiltSubgraph,
  opts: { host: string; port: number; log: Logger },
): Promise<RunningServer> {
  const app = Fastify({ logger: false, bodyLimit: GRAPHQL_BODY_LIMIT });
  installAccessLog(app, opts.log, `subgraph:${subgraph.name}`);
  const apollo = new ApolloServer<RequestContext>({
    schema: subgraph.schema,
    plugins: [ApolloServerPluginInlineTraceDisabled(), fastifyApolloDrainPlugin(app)],
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
