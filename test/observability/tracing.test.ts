import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { initTracing } from '../../core/telemetry/tracing';
import { startTestPlatform, type TestPlatform } from '../support/platform';

// Registered before the platform starts, as the process entry point does.
const exporter = new InMemorySpanExporter();
initTracing({ exporter, ratio: 1 });

let t: TestPlatform;

beforeAll(async () => {
  // Slow steps, so the subscription is open before the operation's later status events.
  t = await startTestPlatform({ SIMULATED_STEP_DELAY_MS: '150' });
});
afterAll(async () => {
  await t.stop();
});

const waitFor = async (ok: () => boolean, ms = 20_000) => {
  const until = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe('one trace for a site creation', () => {
  it('follows the request from the bridge through router, subgraph, MongoDB and Kafka to the subscription update', async () => {
    const { key } = await t.createKey();
    const requestId = `trace-test-${Date.now()}`;
    const res = await t.rest('POST', '/api/v1/publisher/sites', {
      key,
      body: { name: 'Traced' },
      headers: { 'x-request-id': requestId },
    });
    expect(res.status).toBe(202);
    const projectId: string = res.body.data.project.id;

    const client = createClient({
      url: t.routerUrl.replace(/^http/, 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${key}` },
      retryAttempts: 0,
    });
    const updates: Array<{ status: string }> = [];
    const unsubscribe = client.subscribe(
      { query: 'subscription($p: ID!) { operationUpdated(projectId: $p) { id status } }', variables: { p: projectId } },
      { next: (v) => void updates.push((v.data as any).operationUpdated), error: () => undefined, complete: () => undefined },
    );
    try {
      await waitFor(() => updates.some((u) => u.status === 'completed'));
    } finally {
      unsubscribe();
      await client.dispose();
    }

    const spans = exporter.getFinishedSpans();
    const root = spans.find((s) => s.name === 'POST /api/v1/publisher/sites' && s.kind === SpanKind.SERVER);
    expect(root).toBeDefined();
    expect(root!.attributes['platform.component']).toBe('bridge');
    expect(root!.attributes['http.response.status_code']).toBe(202);
    const traceId = root!.spanContext().traceId;
    // The response carries the same trace (W3C traceparent is never echoed, the request id is).
    expect(res.headers.get('x-request-id')).toBe(requestId);

    const ended = (name: string) =>
      exporter.getFinishedSpans().some((s) => s.spanContext().traceId === traceId && s.name === name);
    await waitFor(() => ended('subscription operationUpdated') && ended('operation provision'));
    const trace = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    const byId = new Map(trace.map((s) => [s.spanContext().spanId, s]));
    const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
    const names = trace.map((s) => s.name);

    // bridge → router (Apollo gateway's own spans) → subgraph → MongoDB
    expect(names).toEqual(expect.arrayContaining(['gateway.request', 'gateway.execute', 'subgraph publisher']));
    const subgraph = trace.find((s) => s.name === 'subgraph publisher')!;
    expect(trace.some((s) => s.name.startsWith('mongodb.') && s.kind === SpanKind.CLIENT)).toBe(true);
    const mongoUnderSubgraph = trace
      .filter((s) => s.name.startsWith('mongodb.'))
      .some((s) => {
        for (let p = parentOf(s); p; p = byId.get(p) && parentOf(byId.get(p)!))
          if (p === subgraph.spanContext().spanId) return true;
        return false;
      });
    expect(mongoUnderSubgraph).toBe(true);

    // → the durable operation's run, its Kafka events (producer and consumer) → the subscription update
    expect(names).toContain('operation provision');
    const producers = trace.filter((s) => s.kind === SpanKind.PRODUCER && s.name.endsWith('.operations publish'));
    const consumers = trace.filter((s) => s.kind === SpanKind.CONSUMER && s.name.endsWith('.operations process'));
    expect(producers.length).toBeGreaterThan(0);
    expect(consumers.length).toBeGreaterThan(0);
    // Each consumer span continues a producer span of the same trace: the traceparent rode in the headers.
    const producerIds = new Set(producers.map((s) => s.spanContext().spanId));
    expect(consumers.every((c) => producerIds.has(parentOf(c)!))).toBe(true);
    const update = trace.find((s) => s.name === 'subscription operationUpdated');
    expect(update).toBeDefined();
    expect(consumers.map((c) => c.spanContext().spanId)).toContain(parentOf(update!));
    // Every span of the trace hangs off the bridge's request span (consumers in other groups, such
    // as the activity read models, may still be finishing theirs: their children wait for them).
    const orphans = () => {
      const all = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
      const ids = new Set(all.map((s) => s.spanContext().spanId));
      return all.filter((s) => s !== root && !ids.has(parentOf(s) ?? '')).map((s) => s.name);
    };
    await waitFor(() => orphans().length === 0, 10_000).catch(() => undefined);
    expect(orphans()).toEqual([]);
  });
});
