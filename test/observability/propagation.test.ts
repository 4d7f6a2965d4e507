import Fastify from 'fastify';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { installAccessLog } from '../../core/access-log';
import { childLogger } from '../../core/logger';
import { httpExecutor } from '../../contract/graphql-executor';
import { inSpan, initTracing } from '../../core/telemetry/tracing';

const exporter = new InMemorySpanExporter();
initTracing({ exporter, ratio: 1 });

describe('trace context across processes (split topology)', () => {
  it('the bridge’s HTTP call to the router carries traceparent: the router’s request span is its child', async () => {
    const router = Fastify({ logger: false });
    installAccessLog(router, childLogger('test'), 'router');
    router.post('/graphql', async () => ({ data: { ok: true } }));
    const url = await router.listen({ host: '127.0.0.1', port: 0 });
    try {
      const clientSpanId = await inSpan('bridge request', {}, async (span) => {
        await httpExecutor(`${url}/graphql`).execute('{ ok }', {}, { requestId: 'r-1' });
        return span.spanContext().spanId;
      });
      await new Promise((r) => setTimeout(r, 50));
      const server = exporter.getFinishedSpans().find((s) => s.kind === SpanKind.SERVER && s.name === 'POST /graphql');
      expect(server?.parentSpanContext?.spanId).toBe(clientSpanId);
      expect(server?.attributes['platform.component']).toBe('router');
    } finally {
      await router.close();
    }
  });
});
