import { randomUUID } from 'node:crypto';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { scrape } from '../support/prometheus';
import { waitForOperation } from '../publisher/support';

let t: TestPlatform;

beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(async () => {
  await t.stop();
});

const RUNTIME_OPTIONS = '/api/v1/publisher/runtime-options';
const bridge = (route: string, status: string) => ({ component: 'bridge', method: 'GET', route, status });

describe('GET /metrics on the bridge', () => {
  it('is Prometheus text that moves by exactly the requests and the operation made', async () => {
    const { key } = await t.createKey();
    const before = await scrape(t.bridgeUrl);
    expect(before.contentType).toMatch(/^text\/plain; version=0\.0\.4/);

    for (let i = 0; i < 3; i++) expect((await t.rest('GET', RUNTIME_OPTIONS, { key })).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await t.rest('GET', RUNTIME_OPTIONS)).status).toBe(401);
    // The bridge refuses a missing key before running the route's operation; the same operation sent
    // to the router without a key runs and fails there (the GraphQL error counters below).
    for (let i = 0; i < 2; i++) {
      expect((await t.gql('query RuntimeOptions { runtimeOptions { version } }')).errors?.[0]?.extensions?.status).toBe(401);
    }
    expect((await t.rest('GET', `/api/v1/no-such/${randomUUID()}`, { key })).status).toBe(404);
    const created = await t.rest('POST', '/api/v1/publisher/sites', { key, body: { name: 'Metered' } });
    expect(created.status).toBe(202);
    const op = await waitForOperation(t, key, created.body.data.project.id, created.body.data.operation.id);
    expect(op.status).toBe('completed');

    const after = await scrape(t.bridgeUrl);
    const moved = (name: string, labels: Record<string, string>) => after.value(name, labels) - before.value(name, labels);

    // HTTP: by route template, method and status; unmatched paths share one route label.
    expect(moved('platform_http_requests_total', bridge(RUNTIME_OPTIONS, '200'))).toBe(3);
    expect(moved('platform_http_requests_total', bridge(RUNTIME_OPTIONS, '401'))).toBe(2);
    expect(moved('platform_http_requests_total', bridge('(no route)', '404'))).toBe(1);
    const route = { component: 'bridge', method: 'GET', route: RUNTIME_OPTIONS };
    expect(
      after.count('platform_http_request_duration_seconds', route) -
        before.count('platform_http_request_duration_seconds', route),
    ).toBe(5);

    // GraphQL: the route's fixed operation, by name and outcome.
    expect(moved('platform_graphql_operations_total', { operation: 'RuntimeOptions', outcome: 'ok' })).toBe(3);
    expect(moved('platform_graphql_operations_total', { operation: 'RuntimeOptions', outcome: 'error' })).toBe(2);
    expect(moved('platform_graphql_errors_total', { operation: 'RuntimeOptions' })).toBe(2);
    expect(after.count('platform_graphql_operation_duration_seconds', { operation: 'CreateSite' })).toBeGreaterThanOrEqual(1);
    expect(
      after.count('platform_subgraph_fetch_duration_seconds', { subgraph: 'publisher', transport: 'local' }),
    ).toBeGreaterThan(before.count('platform_subgraph_fetch_duration_seconds', { subgraph: 'publisher', transport: 'local' }));

    // The durable operation: enqueued once, completed once.
    expect(moved('platform_operations_enqueued_total', { type: 'provision' })).toBe(1);
    expect(moved('platform_operation_runs_total', { type: 'provision', outcome: 'completed' })).toBe(1);
    for (const name of [
      'platform_operations',
      'platform_operation_oldest_pending_age_seconds',
      'platform_outbox_pending_events',
      'platform_outbox_oldest_event_age_seconds',
      'platform_kafka_consumer_lag',
    ]) {
      expect(after.types.get(name)).toBe('gauge');
    }
    expect(after.value('platform_operation_oldest_pending_age_seconds')).toBeGreaterThanOrEqual(0);
    expect(after.series('platform_outbox_pending_events').map((l) => l.collection)).toContain('operations');

    // MongoDB command monitoring, Kafka and the Node runtime.
    expect(after.count('platform_mongodb_command_duration_seconds', { command: 'find', outcome: 'ok' })).toBeGreaterThan(
      before.count('platform_mongodb_command_duration_seconds', { command: 'find', outcome: 'ok' }),
    );
    expect(moved('platform_kafka_messages_published_total', {})).toBeGreaterThanOrEqual(1);
    expect(after.types.get('platform_nodejs_eventloop_lag_seconds')).toBe('gauge');
    expect(after.types.get('platform_process_resident_memory_bytes')).toBe('gauge');
  });

  it('keeps label cardinality bounded after 1,000 requests to distinct project ids', async () => {
    const { key } = await t.createKey();
    const ids = Array.from({ length: 1000 }, () => randomUUID());
    const before = await scrape(t.bridgeUrl);
    const queue = [...ids];
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let id = queue.pop(); id; id = queue.pop()) {
          expect((await t.rest('GET', `/api/v1/publisher/projects/${id}/metadata`, { key })).status).toBe(404);
        }
      }),
    );
    const after = await scrape(t.bridgeUrl);
    const route = '/api/v1/publisher/projects/:projectID/metadata';
    expect(
      after.value('platform_http_requests_total', bridge(route, '404')) -
        before.value('platform_http_requests_total', bridge(route, '404')),
    ).toBe(1000);
    // A handful of new series at most per family (this route's, an operation name), none carrying an id.
    const was = before.seriesCounts();
    const grown = [...after.seriesCounts()]
      .map(([family, n]) => ({ family, grew: n - (was.get(family) ?? 0) }))
      .filter((g) => g.grew > 3);
    expect(grown).toEqual([]);
    const text = await (await fetch(`${t.bridgeUrl}/metrics`)).text();
    for (const id of ids.slice(0, 50)) expect(text).not.toContain(id);
    expect(
      after.series('platform_http_requests_total').length - before.series('platform_http_requests_total').length,
    ).toBeLessThanOrEqual(1);
  });
});
