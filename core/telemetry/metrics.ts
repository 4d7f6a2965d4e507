import { collectDefaultMetrics, Counter, Gauge, Histogram, register, type Registry } from 'prom-client';

/**
 * The process's Prometheus metrics (prom-client's default registry), served at `GET /metrics` on
 * every listener that calls `installMetricsRoute`. The kernel feeds them from its hooks (access
 * log, Apollo plugin, gateway data sources, operation engine, event bus, MongoDB command
 * monitoring), so an area is measured by being an area.
 *
 * Label values are bounded: routes are templates (`/api/v1/projects/:id`), never paths; names that
 * come from clients (GraphQL operation names) are cut at a fixed number of distinct values, after
 * which they count as `(other)`.
 */
export const metricsRegistry: Registry = register;

/** Distinct values one free-form label keeps before the rest count as `(other)`: 200. */
export const MAX_LABEL_VALUES = 200;
export const OTHER = '(other)';

/** A label whose values come from outside: the first `max` distinct values, then `(other)`. */
export function boundedLabel(max = MAX_LABEL_VALUES): (value: string) => string {
  const seen = new Set<string>();
  return (value) => {
    if (seen.has(value)) return value;
    if (seen.size >= max) return OTHER;
    seen.add(value);
    return value;
  };
}

/** Request durations, in seconds: 2.5 ms to 10 s. */
const LATENCY_BUCKETS = [0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Database command durations, in seconds: 0.25 ms to 2.5 s. */
const DB_BUCKETS = [0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5];

export const httpRequests = new Counter({
  name: 'platform_http_requests_total',
  help: 'HTTP requests answered, by listener, method, route template and status.',
  labelNames: ['component', 'method', 'route', 'status'] as const,
});

export const httpDuration = new Histogram({
  name: 'platform_http_request_duration_seconds',
  help: 'HTTP request durations, by listener, method and route template.',
  labelNames: ['component', 'method', 'route'] as const,
  buckets: LATENCY_BUCKETS,
});

export const graphqlOperations = new Counter({
  name: 'platform_graphql_operations_total',
  help: 'GraphQL operations executed by the router, by operation name and outcome (ok or error).',
  labelNames: ['operation', 'outcome'] as const,
});

export const graphqlErrors = new Counter({
  name: 'platform_graphql_errors_total',
  help: 'GraphQL errors returned by the router, by operation name and error code.',
  labelNames: ['operation', 'code'] as const,
});

export const graphqlDuration = new Histogram({
  name: 'platform_graphql_operation_duration_seconds',
  help: 'GraphQL operation durations at the router, by operation name.',
  labelNames: ['operation'] as const,
  buckets: LATENCY_BUCKETS,
});

export const subgraphFetchDuration = new Histogram({
  name: 'platform_subgraph_fetch_duration_seconds',
  help: 'Subgraph fetches as the gateway sees them, by subgraph and transport (local or http).',
  labelNames: ['subgraph', 'transport'] as const,
  buckets: LATENCY_BUCKETS,
});

export const operationRuns = new Counter({
  name: 'platform_operation_runs_total',
  help: 'Durable operation runs that ended, by operation type and outcome (completed, failed, retried, lease_lost, released).',
  labelNames: ['type', 'outcome'] as const,
});

export const operationsEnqueued = new Counter({
  name: 'platform_operations_enqueued_total',
  help: 'Durable operations enqueued by this process, by operation type.',
  labelNames: ['type'] as const,
});

export const kafkaPublished = new Counter({
  name: 'platform_kafka_messages_published_total',
  help: 'Messages published to Kafka by this process.',
});

export const kafkaConsumed = new Counter({
  name: 'platform_kafka_messages_consumed_total',
  help: 'Kafka messages handled, by outcome (ok or dead_lettered).',
  labelNames: ['outcome'] as const,
});

export const mongoCommandDuration = new Histogram({
  name: 'platform_mongodb_command_duration_seconds',
  help: 'MongoDB command durations (driver command monitoring), by command name and outcome.',
  labelNames: ['command', 'outcome'] as const,
  buckets: DB_BUCKETS,
});

/**
 * Values read from the database and the broker when Prometheus scrapes (queue depths, backlog,
 * lag): each running platform adds a probe and removes it when it stops.
 */
export interface ScrapeProbe {
  /** Non-terminal durable operations by type and status, and the oldest pending one's age in seconds. */
  operations?(): Promise<{
    counts: Array<{ type: string; status: string; count: number }>;
    oldestPendingAgeS: number | null;
    oldestPending?: { id: string; type: string; ageS: number } | null;
  }>;
  /** Pending outbox events by collection, and the oldest one's age in seconds (the relay's lag). */
  outbox?(): Promise<Array<{ collection: string; pending: number; oldestAgeS: number | null }>>;
  /** Consumer lag (messages) per group and topic. */
  consumerLag?(): Promise<Array<{ group: string; topic: string; lag: number }>>;
}

const probes = new Set<ScrapeProbe>();

export function addScrapeProbe(probe: ScrapeProbe): () => void {
  probes.add(probe);
  return () => probes.delete(probe);
}

/** Runs every probe's `pick` once per scrape, ignoring probes that fail (an engine down must not break /metrics). */
async function fromProbes<T>(pick: (p: ScrapeProbe) => Promise<T> | undefined): Promise<T[]> {
  const results: Array<T | undefined> = await Promise.all(
    [...probes].map((p) => Promise.resolve(pick(p)).catch(() => undefined)),
  );
  return results.filter((r): r is T => r !== undefined);
}

/** A scrape reads each probe once, though several gauges use its answer. */
function memoPerScrape<T>(read: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => {
    pending ??= read().finally(() => setTimeout(() => (pending = undefined), 0));
    return pending;
  };
}

const readOperations = memoPerScrape(() => fromProbes((p) => p.operations?.()));
const readOutbox = memoPerScrape(() => fromProbes((p) => p.outbox?.()));

new Gauge({
  name: 'platform_operations',
  help: 'Durable operations not yet finished, by type and status (pending, running).',
  labelNames: ['type', 'status'] as const,
  async collect() {
    this.reset();
    for (const r of await readOperations()) for (const c of r.counts) this.inc({ type: c.type, status: c.status }, c.count);
  },
});

new Gauge({
  name: 'platform_operation_oldest_pending_age_seconds',
  help: 'Age of the oldest pending durable operation, in seconds (0 when none is pending).',
  async collect() {
    const ages = (await readOperations()).map((r) => r.oldestPendingAgeS ?? 0);
    this.set(ages.length ? Math.max(...ages) : 0);
  },
});

new Gauge({
  name: 'platform_outbox_pending_events',
  help: 'Events waiting in outboxes for the relay, by collection.',
  labelNames: ['collection'] as const,
  async collect() {
    this.reset();
    for (const rows of await readOutbox()) for (const r of rows) this.inc({ collection: r.collection }, r.pending);
  },
});

new Gauge({
  name: 'platform_outbox_oldest_event_age_seconds',
  help: 'Age of the oldest event waiting in an outbox, in seconds: the relay lag (0 when none waits).',
  labelNames: ['collection'] as const,
  async collect() {
    this.reset();
    for (const rows of await readOutbox()) for (const r of rows) this.set({ collection: r.collection }, r.oldestAgeS ?? 0);
  },
});

new Gauge({
  name: 'platform_kafka_consumer_lag',
  help: 'Messages not yet consumed, by consumer group and topic.',
  labelNames: ['group', 'topic'] as const,
  async collect() {
    this.reset();
    for (const rows of await fromProbes((p) => p.consumerLag?.())) {
      for (const r of rows) this.inc({ group: r.group, topic: r.topic }, r.lag);
    }
  },
});

let defaults = false;

/** Node runtime metrics (heap, event loop lag, GC, handles), once per process. */
export function collectRuntimeMetrics(): void {
  if (defaults) return;
  defaults = true;
  collectDefaultMetrics({ register, prefix: 'platform_' });
}

/** The exposition text and its content type. */
export async function metricsText(): Promise<{ contentType: string; body: string }> {
  return { contentType: register.contentType, body: await register.metrics() };
}
