/**
 * The port between the REST bridge and the router: the bridge runs each row's one fixed GraphQL
 * operation through a `GraphQLExecutor`, and the router provides one (`router/executor.ts`, same
 * process) or is reached over HTTP (`httpExecutor`, another process). It lives here, below both,
 * so neither imports the other (docs/decisions/0192-contract-layer.md).
 */
import { context, propagation } from '@opentelemetry/api';
import type { GraphQLFormattedError } from 'graphql';

export interface ExecutionResult {
  data?: Record<string, unknown> | null;
  errors?: readonly GraphQLFormattedError[];
}

/** Runs one fixed GraphQL operation on the router, as the caller (their Authorization header). */
export interface GraphQLExecutor {
  execute(
    query: string,
    variables: Record<string, unknown>,
    auth: { authorization?: string; requestId: string; clientIp?: string },
    /** Which operation of a document with several to run (the console's own documents). */
    operationName?: string,
  ): Promise<ExecutionResult>;
}

/** Another process: POST to the router's /graphql with the caller's Authorization header. */
export function httpExecutor(routerUrl: string): GraphQLExecutor {
  return {
    async execute(query, variables, auth, operationName) {
      const headers: Record<string, string> = { 'content-type': 'application/json', 'x-request-id': auth.requestId };
      if (auth.authorization) headers.authorization = auth.authorization;
      // The client's address: the router believes it when the bridge is in its TRUST_PROXY.
      if (auth.clientIp) headers['x-forwarded-for'] = auth.clientIp;
      // The router's spans join the bridge request's trace (W3C traceparent).
      propagation.inject(context.active(), headers);
      const res = await fetch(routerUrl, { method: 'POST', headers, body: JSON.stringify({ query, variables, operationName }) });
      return (await res.json()) as ExecutionResult;
    },
  };
}
