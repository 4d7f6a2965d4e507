import { ApolloGateway, type GraphQLDataSource } from '@apollo/gateway';
import { ApolloServer } from '@apollo/server';
import fastifyApollo from '@as-integrations/fastify';
import Fastify, { type FastifyInstance } from 'fastify';
import { randomUUID } from 'node:crypto';
import { formatPlatformError } from '../core/graphql-errors';
import { closeListener } from '../core/http-close';
import type { Logger } from '../core/logger';
import { installAccessLog } from '../core/access-log';
import { graphqlMetricsPlugin } from '../core/telemetry/graphql';
import { installMetricsRoute } from '../core/telemetry/http';
import { introspectionAllowed, ROUTER_VALIDATION_RULES } from '../core/graphql-limits';
import { installRouterRateLimit } from './rate-limit';
import type { Principal } from '../core/principal';
import type { BuiltSubgraph } from '../core/subgraph-kit';
import { type GatewayContext, InProcessDataSource, SignedRemoteDataSource } from './data-sources';
import type { FeedDefinition } from '../core/area';
import type { Ports } from '../core/ports';
import type { FeedHub } from './feed-hub';
import { attachSubscriptions } from './subscriptions';

export interface RouterOptions {
  supergraphSdl: string;
  /** Subgraphs living in this process: reached by call instead of HTTP. */
  local: BuiltSubgraph[];
  /** Where the others live: name → URL (defaults to the URL in the supergraph). */
  remoteUrls?: Record<string, string>;
  authenticate: (rawKey: string) => Promise<Principal | null>;
  /** Live feeds (graphql-ws) and the ports their access filters read. */
  hub: FeedHub;
  feeds: readonly FeedDefinition<unknown, Record<string, unknown>>[];
  ports: Ports;
  log: Logger;
  /** Requests per minute per key on `/graphql` over HTTP (default DEFAULT_RATE_LIMIT_PER_MINUTE). */
  rateLimitPerMinute?: number;
  /** NODE_ENV of the platform: introspection is off in production. */
  nodeEnv?: string;
}

/** Parses `Authorization: Bearer <key>`; anything else is no credential. */
export function bearerToken(authorization: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  return m?.[1];
}

/** The federated graph: gateway + Apollo Server, usable in-process (bridge) or over HTTP. */
export class Router {
  readonly apollo: ApolloServer<GatewayContext>;
  private app?: FastifyInstance;
  private subs?: { close(): Promise<void> };

  constructor(private readonly opts: RouterOptions) {
    const local = new Map(opts.local.map((s) => [s.name, s]));
    const gateway = new ApolloGateway({
      supergraphSdl: opts.supergraphSdl,
      buildService: ({ name, url }): GraphQLDataSource => {
        const subgraph = local.get(name);
        if (subgraph) return new InProcessDataSource(subgraph, opts.log);
        return new SignedRemoteDataSource(name, { url: opts.remoteUrls?.[name] ?? url });
      },
    });
    this.apollo = new ApolloServer<GatewayContext>({
      gateway,
      formatError: (formatted, error) => formatPlatformError(formatted, error, opts.log),
      includeStacktraceInErrorResponses: false,
      introspection: introspectionAllowed(opts.nodeEnv),
      validationRules: ROUTER_VALIDATION_RULES,
      plugins: [graphqlMetricsPlugin()],
    });
  }

  /** The request context for a bearer header: shared by HTTP, graphql-ws and the in-process bridge. */
  async context(authorization: string | undefined, requestId: string = randomUUID()): Promise<GatewayContext> {
    const token = bearerToken(authorization);
    const principal = token ? await this.opts.authenticate(token) : null;
    return { principal, requestId };
  }

  async start(): Promise<void> {
    await this.apollo.start();
  }

  /** Serves `/graphql` (HTTP and graphql-ws) on host:port. */
  async listen(host: string, port: number): Promise<string> {
    const app = Fastify({ logger: false });
    this.app = app;
    installAccessLog(app, this.opts.log, 'router');
    installRouterRateLimit(app, this.opts.rateLimitPerMinute);
    await app.register(fastifyApollo(this.apollo), {
      path: '/graphql',
      context: async (req) => this.context(req.headers.authorization, (req.headers['x-request-id'] as string) ?? req.id),
    });
    app.get('/healthz', async () => ({ status: 'ok' }));
    installMetricsRoute(app);
    const address = await app.listen({ host, port });
    this.subs = attachSubscriptions(app.server, '/graphql', {
      hub: this.opts.hub,
      feeds: this.opts.feeds,
      ports: this.opts.ports,
      authenticate: async (authorization) => (await this.context(authorization)).principal,
      log: this.opts.log,
    });
    return `${address}/graphql`;
  }

  async stop(): Promise<void> {
    await this.subs?.close();
    if (this.app) await closeListener(this.app);
    await this.apollo.stop();
  }
}
