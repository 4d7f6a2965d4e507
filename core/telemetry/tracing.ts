import {
  context,
  createContextKey,
  propagation,
  ROOT_CONTEXT,
  type Context,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  type Sampler,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-node';
import { redactMessage } from '../operations/redact';

/**
 * Tracing with the official OpenTelemetry SDK. One tracer provider per process, registered
 * globally, so @apollo/gateway's own spans (`gateway.request`, `gateway.plan`, `gateway.fetch`…)
 * land in the same traces as ours. The context manager (AsyncLocalStorage) is registered even
 * when nothing is exported: log lines read `trace_id` and `request_id` from it.
 *
 * Env (OpenTelemetry's own names):
 * - `OTEL_EXPORTER_OTLP_ENDPOINT` (e.g. `http://collector:4318`): export spans over OTLP/HTTP;
 *   unset, nothing is recorded or exported (spans are non-recording, ids still flow).
 * - `OTEL_TRACES_SAMPLER_ARG`: ratio of new traces recorded, 0..1 (default 1); a sampled parent
 *   (`traceparent` flag 01) is always followed.
 * - `OTEL_SERVICE_NAME`: the service name on spans (default `platform`).
 */
export interface TracingOptions {
  /** Extra exporter, fed span by span (tests: an InMemorySpanExporter). */
  exporter?: SpanExporter;
  /** Extra exporter fed in batches, as the OTLP one is (benchmarks). */
  batchExporter?: SpanExporter;
  /** Ratio of new traces recorded (default OTEL_TRACES_SAMPLER_ARG, else 1). */
  ratio?: number;
  serviceName?: string;
  env?: NodeJS.ProcessEnv;
}

let provider: NodeTracerProvider | undefined;

/** The provider's sampler, which can be switched while running (benchmarks compare modes in one process). */
class SwitchableSampler implements Sampler {
  constructor(public delegate: Sampler) {}
  shouldSample(...args: Parameters<Sampler['shouldSample']>) {
    return this.delegate.shouldSample(...args);
  }
  toString(): string {
    return this.delegate.toString();
  }
}
const sampler = new SwitchableSampler(new AlwaysOffSampler());

const ratioSampler = (ratio: number): Sampler => new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });

/** Records `ratio` of new traces from now on (a sampled caller is always followed); `null` records none. */
export function setSamplingRatio(ratio: number | null): void {
  sampler.delegate = ratio === null ? new AlwaysOffSampler() : ratioSampler(ratio);
}

/** Registers the tracer provider once per process; later calls return the first one. */
export function initTracing(opts: TracingOptions = {}): NodeTracerProvider {
  if (provider) return provider;
  const env = opts.env ?? process.env;
  const processors: SpanProcessor[] = [];
  if (env.OTEL_EXPORTER_OTLP_ENDPOINT) processors.push(new BatchSpanProcessor(new OTLPTraceExporter()));
  if (opts.exporter) processors.push(new SimpleSpanProcessor(opts.exporter));
  if (opts.batchExporter) processors.push(new BatchSpanProcessor(opts.batchExporter));
  // Nothing to export: record nothing (a sampled remote parent would otherwise be recorded for naught).
  setSamplingRatio(processors.length === 0 ? null : (opts.ratio ?? samplingRatio(env)));
  provider = new NodeTracerProvider({
    sampler,
    spanProcessors: processors,
    resource: resourceFromAttributes({ 'service.name': opts.serviceName ?? env.OTEL_SERVICE_NAME ?? 'platform' }),
  });
  // Registers the AsyncLocalStorage context manager and the W3C trace-context + baggage propagator.
  provider.register();
  return provider;
}

/** OTEL_TRACES_SAMPLER_ARG as a ratio in 0..1 (default 1). */
export function samplingRatio(env: NodeJS.ProcessEnv = process.env): number {
  const n = Number(env.OTEL_TRACES_SAMPLER_ARG);
  return env.OTEL_TRACES_SAMPLER_ARG !== undefined && Number.isFinite(n) ? Math.min(1, Math.max(0, n)) : 1;
}

/** Flushes spans still in batch processors (before exit, and in tests). */
export async function flushTracing(): Promise<void> {
  await provider?.forceFlush();
}

export const tracer = (): Tracer => trace.getTracer('platform');

/** What a request (HTTP, Kafka message, operation run) carries beside its span: its request id. */
export interface RequestScope {
  requestId?: string;
}

const REQUEST_SCOPE = createContextKey('platform.request-scope');

export function withRequestScope(ctx: Context, scope: RequestScope): Context {
  return ctx.setValue(REQUEST_SCOPE, scope);
}

/** The current request's scope (mutable: the HTTP hook fills `requestId` once Fastify picked it). */
export function requestScope(ctx: Context = context.active()): RequestScope | undefined {
  return ctx.getValue(REQUEST_SCOPE) as RequestScope | undefined;
}

/** `trace_id` and `request_id` of the current context, for log lines (empty outside any request). */
export function logCorrelation(): { trace_id?: string; request_id?: string } {
  const ctx = context.active();
  const sc = trace.getSpanContext(ctx);
  const scope = requestScope(ctx);
  const out: { trace_id?: string; request_id?: string } = {};
  if (sc && trace.isSpanContextValid(sc)) out.trace_id = sc.traceId;
  if (scope?.requestId) out.request_id = scope.requestId;
  return out;
}

/** The W3C `traceparent` of the current context, when there is a span (stored with outbox events). */
export function currentTraceparent(ctx: Context = context.active()): string | undefined {
  const sc = trace.getSpanContext(ctx);
  if (!sc || !trace.isSpanContextValid(sc)) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier.traceparent;
}

/** The context a stored or received `traceparent` names (the root context when absent). */
export function contextFromTraceparent(traceparent: string | undefined, base: Context = ROOT_CONTEXT): Context {
  return traceparent ? propagation.extract(base, { traceparent }) : base;
}

/** `fn` bound to the root context: background loops a request happened to nudge must not join its trace. */
export function detached<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  return context.bind(ROOT_CONTEXT, fn);
}

/** Runs `fn` in a new active span; errors mark the span and pass on. */
export async function inSpan<T>(
  name: string,
  opts: { kind?: SpanKind; attributes?: Record<string, string | number | boolean>; parent?: Context },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const parent = opts.parent ?? context.active();
  const span = tracer().startSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (e) {
    // The message passes the secret rules first: traces leave the process.
    span.recordException({ name: e instanceof Error ? e.name : 'Error', message: redactMessage(e) });
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw e;
  } finally {
    span.end();
  }
}

export { SpanKind, SpanStatusCode };
