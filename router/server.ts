import { ApolloGateway, type GraphQLDataSource } from '@apollo/gateway';
import { ApolloServer } from '@apollo/server';
import fastifyApollo from '@as-integrations/fastify';
import Fastify, { type FastifyInstance } from 'fastify';
import { GRAPHQL_BODY_LIMIT } from '../core/subgraph-server';
import { GraphQLError } from 'graphql';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import proxyaddr from '@fastify/proxy-addr';
import { formatPlatformError } from '../core/graphql-errors';
import { closeListener } from '../core/http-close';
import type { Logger } from '../core/logger';
import { installAccessLog } from '../core/access-log';
import { graphqlMetricsPlugin } from '../core/telemetry/graphql';
import { installMetricsRoute } from '../core/telemetry/http';
import { introspectionAllowed, ROUTER_VALIDATION_RULES } from '../core/graphql-limits';
import { installRouterRateLimit } from './rate-limit';
import { bearerToken, EdgeLimits } from '../core/rate-limit';
import type { Principal } from '../core/principal';
import type { BuiltSubgraph } from '../core/subgraph-kit';
import { type GatewayContext, InProcessDataSource, SignedRemoteDataSource } from './data-sources';
import type { FeedDefinition } from '../core/area';
import type { Ports } from '../core/ports';
import type { FeedHub } from './feed-hub';
import { attachSubscriptions, type SocketLimits } from './subscriptions';
import { wholeSchemaIntrospection } from './tools-schema';
import { SingleFetchGateway } from './single-fetch';

export interface RouterOptions {
  supergraphSdl: string;
  /** Subgraphs living in this process: reached by call instead of HTTP. */
  local: BuiltSubgraph[];
  /** Where the others live: name → URL (defaults to the URL in the supergraph). */
  remoteUrls?: Record<string, string>;
  authenticate: (rawKey: string) => Promise<Principal | null>;
  /** A key check that bypasses any cache: open graphql-ws connections are re-checked with it (default: authenticate). */
  recheck?: (rawKey: string) => Promise<Principal | null>;
  /** Live feeds (graphql-ws) and the ports their access filters read. */
  hub: FeedHub;
  feeds: readonly FeedDefinition<unknown, Record<string, unknown>>[];
  ports: Ports;
  log: Logger;
  /** Requests per minute per key on `/graphql` over HTTP and graphql-ws (default DEFAULT_RATE_LIMIT_PER_MINUTE). */
  rateLimitPerMinute?: number;
  /** Failed authentications per minute per client address (default DEFAULT_AUTH_FAILURES_PER_MINUTE). */
  authFailuresPerMinute?: number;
  /** graphql-ws limits per key (default DEFAULT_SOCKET_LIMITS). */
  socketLimits?: Partial<SocketLimits>;
  /** TRUST_PROXY: proxies (the bridge, a load balancer) whose X-Forwarded-For names the client. */
  trustProxy?: string;
  /** NODE_ENV of the platform: introspection is off in production. */
  nodeEnv?: string;
}

export { bearerToken };

/**
 * The client's address of a raw request (graphql-ws upgrades), as Fastify decides it for HTTP: the
 * socket's, or, when the socket is a trusted proxy, the nearest untrusted X-Forwarded-For hop.
 */
export function clientAddress(request: IncomingMessage, trustProxy: string[] | false): string | undefined {
  const socket = request.socket.remoteAddress;
  if (!trustProxy || !socket) return socket;
  const trusted = proxyaddr.compile(trustProxy);
  return proxyaddr(request, trusted);
}

/** The federated graph: gateway + Apollo Server, usable in-process (bridge) or over HTTP. */
export class Router {
  readonly apollo: ApolloServer<GatewayContext>;
  /** The gateway, with its single-fetch path (decision 0313). */
  readonly gateway: SingleFetchGateway;
  private app?: FastifyInstance;
  private subs?: { close(): Promise<void> };
  private readonly limits: EdgeLimits;

  constructor(private readonly opts: RouterOptions) {
    this.limits = new EdgeLimits(opts.authenticate, {
      perMinute: opts.rateLimitPerMinute,
      authFailuresPerMinute: opts.authFailuresPerMinute,
    });
    const local = new Map(opts.local.map((s) => [s.name, s]));
    this.gateway = new SingleFetchGateway(
      ({ wrap, didResolveQueryPlan }) =>
        new ApolloGateway({
          supergraphSdl: opts.supergraphSdl,
          buildService: ({ name, url }): GraphQLDataSource => {
            const subgraph = local.get(name);
            if (subgraph) return wrap(name, new InProcessDataSource(subgraph, opts.log));
            return wrap(name, new SignedRemoteDataSource(name, { url: opts.remoteUrls?.[name] ?? url }));
          },
          experimental_didResolveQueryPlan: didResolveQueryPlan,
        }),
    );
    this.apollo = new ApolloServer<GatewayContext>({
      gateway: this.gateway,
      formatError: (formatted, error) => formatPlatformError(formatted, error, opts.log),
      includeStacktraceInErrorResponses: false,
      introspection: introspectionAllowed(opts.nodeEnv),
      validationRules: ROUTER_VALIDATION_RULES,
      // Introspection answers the subscriptions served on the same path too (the whole schema for tools).
      plugins: [graphqlMetricsPlugin(), wholeSchemaIntrospection(opts.feeds)],
    });
  }

  /** The request context for a bearer header: shared by HTTP, graphql-ws and the in-process bridge. */
  async context(
    authorization: string | undefined,
    requestId: string = randomUUID(),
    clientIp?: string,
    known?: Principal | null,
  ): Promise<GatewayContext> {
    const token = bearerToken(authorization);
    const principal = known !== undefined ? known : token ? await this.opts.authenticate(token) : null;
    return { principal, requestId, clientIp };
  }

  async start(): Promise<void> {
    await this.apollo.start();
  }

  /** Serves `/graphql` (HTTP and graphql-ws) on host:port. */
  async listen(host: string, port: number): Promise<string> {
    // The client address (`req.ip`): the socket's, or a trusted proxy's X-Forwarded-For.
    const trustProxy = this.opts.trustProxy ? this.opts.trustProxy.split(',').map((s) => s.trim()) : false;
    const app = Fastify({ logger: false, trustProxy, bodyLimit: GRAPHQL_BODY_LIMIT });
    this.app = app;
    installAccessLog(app, this.opts.log, 'router');
    installRouterRateLimit(app, this.limits);
    await app.register(fastifyApollo(this.apollo), {
      path: '/graphql',
      context: async (req) =>
        this.context(req.headers.authorization, (req.headers['x-request-id'] as string) ?? req.id, req.ip, req.caller?.principal),
    });
    app.get('/healthz', async () => ({ status: 'ok' }));
    installMetricsRoute(app);
    const address = await app.listen({ host, port });
    this.subs = attachSubscriptions(app.server, '/graphql', {
      hub: this.opts.hub,
      feeds: this.opts.feeds,
      ports: this.opts.ports,
      authenticate: async (authorization) => (await this.context(authorization)).principal,
      recheck: async (authorization) => {
        const token = bearerToken(authorization);
        return token ? (this.opts.recheck ?? this.opts.authenticate)(token) : null;
      },
      // Queries and mutations over the socket: the same Apollo Server, validation rules and subgraph checks as POST.
      clientIp: (request) => clientAddress(request, trustProxy),
      operation: async (request, principal, clientIp) => {
        const contextValue: GatewayContext = { principal, requestId: randomUUID(), clientIp };
        const response = await this.apollo.executeOperation(request, { contextValue });
        if (response.body.kind !== 'single') throw new Error('incremental delivery is not used over graphql-ws');
        const { data, errors } = response.body.singleResult;
        // graphql-ws serialises GraphQLError instances: the formatted errors become ones again, extensions kept.
        const shaped = errors?.map((e) => new GraphQLError(e.message, { path: e.path, extensions: e.extensions }));
        return { data: data as Record<string, unknown> | null | undefined, ...(shaped ? { errors: shaped } : {}) };
      },
      take: (principal) => this.limits.requests.take(`k:${principal.keyId}`).ok,
      limits: this.opts.socketLimits,
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
