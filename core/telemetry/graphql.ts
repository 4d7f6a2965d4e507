import type { ApolloServerPlugin } from '@apollo/server';
import { SpanKind } from '@opentelemetry/api';
import { boundedLabel, graphqlDuration, graphqlErrors, graphqlOperations, subgraphFetchDuration } from './metrics';
import { inSpan } from './tracing';

/** Operation names come from clients: the first 200 distinct ones are kept, the rest count as `(other)`. */
const operationLabel = boundedLabel();
const codeLabel = boundedLabel(100);

/**
 * Apollo Server plugin of the router: counts each operation by name and outcome, its duration and
 * its errors by code. The bridge's fixed documents all carry names, so their labels are the REST
 * routes' operations (`CreateSite`, `GetProject`…).
 */
export function graphqlMetricsPlugin(): ApolloServerPlugin {
  return {
    async requestDidStart() {
      const started = process.hrtime.bigint();
      return {
        async willSendResponse({ request, operationName, response }) {
          const operation = operationLabel(operationName ?? request.operationName ?? '(anonymous)');
          const body = response.body;
          const errors = body.kind === 'single' ? (body.singleResult.errors ?? []) : [];
          graphqlOperations.inc({ operation, outcome: errors.length > 0 ? 'error' : 'ok' });
          for (const e of errors) {
            const code = (e.extensions as { code?: unknown } | undefined)?.code;
            graphqlErrors.inc({ operation, code: codeLabel(typeof code === 'string' ? code : 'unknown') });
          }
          graphqlDuration.observe({ operation }, Number(process.hrtime.bigint() - started) / 1e9);
        },
      };
    },
  };
}

/** One subgraph fetch of a query plan: a CLIENT span and the fetch-duration histogram. */
export async function measureSubgraphFetch<T>(
  subgraph: string,
  transport: 'local' | 'http',
  fetch: () => Promise<T>,
): Promise<T> {
  const end = subgraphFetchDuration.startTimer({ subgraph, transport });
  try {
    return await inSpan(
      `subgraph ${subgraph}`,
      { kind: SpanKind.CLIENT, attributes: { 'graphql.subgraph': subgraph, 'platform.transport': transport } },
      () => fetch(),
    );
  } finally {
    end();
  }
}
