import { type GraphQLDataSource, type GraphQLDataSourceProcessOptions, RemoteGraphQLDataSource } from '@apollo/gateway';
import { randomUUID } from 'node:crypto';
import { type DocumentNode, parse, type GraphQLFormattedError } from 'graphql';
import { executeDocument } from '../core/compiled-execution';
import { formatPlatformError } from '../core/graphql-errors';
import type { Logger } from '../core/logger';
import { PRINCIPAL_HEADER, type Principal, signPrincipal } from '../core/principal';
import { type BuiltSubgraph, contextFromHeaders } from '../core/subgraph-kit';
import { measureSubgraphFetch } from '../core/telemetry/graphql';
import { context as otelContext, propagation } from '@opentelemetry/api';

/** What the gateway carries per request and hands to every data source. */
export interface GatewayContext {
  principal: Principal | null;
  requestId: string;
  /** The caller's address as the edge saw it (socket, or a trusted proxy's X-Forwarded-For). */
  clientIp?: string;
}

/** Fetch documents the query planner sends repeat; parsed ones are kept (bounded). */
const PARSED_CACHE_MAX = 2000;

/**
 * Reaches a co-located subgraph by a call instead of HTTP. It still signs the principal and the
 * subgraph still verifies it, through the very code its HTTP server uses.
 */
export class InProcessDataSource implements GraphQLDataSource<GatewayContext> {
  private readonly parsed = new Map<string, DocumentNode>();
  constructor(
    private readonly subgraph: BuiltSubgraph,
    private readonly log: Logger,
  ) {}

  process(options: GraphQLDataSourceProcessOptions<GatewayContext>) {
    return measureSubgraphFetch(this.subgraph.name, 'local', () => this.run(options));
  }

  private async run({ request, context }: GraphQLDataSourceProcessOptions<GatewayContext>) {
    const query = request.query ?? '';
    let document = this.parsed.get(query);
    if (!document) {
      document = parse(query);
      if (this.parsed.size >= PARSED_CACHE_MAX) this.parsed.clear();
      this.parsed.set(query, document);
    }
    const binding = { audience: this.subgraph.name, requestId: context.requestId, clientIp: context.clientIp };
    const contextValue = contextFromHeaders(
      { [PRINCIPAL_HEADER]: signPrincipal(context.principal ?? null, binding), 'x-request-id': binding.requestId },
      this.subgraph.name,
    );
    const result = await executeDocument({
      schema: this.subgraph.schema,
      document,
      source: query,
      variableValues: request.variables,
      operationName: request.operationName,
      contextValue,
    });
    const errors: GraphQLFormattedError[] | undefined = result.errors?.map((e) => formatPlatformError(e.toJSON(), e, this.log));
    return { data: result.data as Record<string, unknown> | null | undefined, errors };
  }
}

/** Reaches a subgraph in another process over HTTP, with the signed principal header. */
export class SignedRemoteDataSource extends RemoteGraphQLDataSource<GatewayContext> {
  /** `subgraph` names the audience the principal is signed for. */
  constructor(
    private readonly subgraph: string,
    config: ConstructorParameters<typeof RemoteGraphQLDataSource<GatewayContext>>[0],
  ) {
    super(config);
  }

  override willSendRequest({ request, context }: GraphQLDataSourceProcessOptions<GatewayContext>): void {
    const requestId = context.requestId || randomUUID();
    const binding = { audience: this.subgraph, requestId, clientIp: context.clientIp };
    request.http?.headers.set(PRINCIPAL_HEADER, signPrincipal(context.principal ?? null, binding));
    request.http?.headers.set('x-request-id', requestId);
    // The subgraph's spans join the caller's trace (W3C traceparent).
    const headers = request.http?.headers;
    if (headers) propagation.inject(otelContext.active(), headers, { set: (h, k, v) => h.set(k, v) });
  }

  override process(options: GraphQLDataSourceProcessOptions<GatewayContext>) {
    return measureSubgraphFetch(this.subgraph, 'http', () => super.process(options));
  }
}
