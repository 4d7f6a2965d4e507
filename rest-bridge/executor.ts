import { context, propagation } from '@opentelemetry/api';
import type { GraphQLFormattedError } from 'graphql';
import type { Router } from '../router/server';

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
  ): Promise<ExecutionResult>;
}

/** Same process: the operation runs on the router's Apollo Server without an HTTP hop. */
export function inProcessExecutor(router: Router): GraphQLExecutor {
  return {
    async execute(query, variables, auth) {
      const contextValue = await router.context(auth.authorization, auth.requestId, auth.clientIp);
      const response = await router.apollo.executeOperation({ query, variables }, { contextValue });
      if (response.body.kind !== 'single') throw new Error('incremental delivery is not used by the bridge');
      return response.body.singleResult as ExecutionResult;
    },
  };
}

/** Another process: POST to the router's /graphql with the caller's Authorization header. */
export function httpExecutor(routerUrl: string): GraphQLExecutor {
  return {
    async execute(query, variables, auth) {
      const headers: Record<string, string> = { 'content-type': 'application/json', 'x-request-id': auth.requestId };
      if (auth.authorization) headers.authorization = auth.authorization;
      // The client's address: the router believes it when the bridge is in its TRUST_PROXY.
      if (auth.clientIp) headers['x-forwarded-for'] = auth.clientIp;
      // The router's spans join the bridge request's trace (W3C traceparent).
      propagation.inject(context.active(), headers);
      const res = await fetch(routerUrl, { method: 'POST', headers, body: JSON.stringify({ query, variables }) });
      return (await res.json()) as ExecutionResult;
    },
  };
}
