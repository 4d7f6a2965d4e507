import { context, propagation, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { BusMessage } from '../events/event-bus';
import { kafkaConsumed, kafkaPublished } from './metrics';
import { contextFromTraceparent, inSpan, tracer, withRequestScope } from './tracing';

/** Header carrying the request id beside `traceparent`, so consumers' log lines name the request. */
export const REQUEST_ID_HEADER = 'x-request-id';

/**
 * PRODUCER spans for a batch about to be sent. A message that already carries a `traceparent`
 * (an outbox event stored with the context of the request that caused it) gets its span in that
 * trace, not in the relay's; any other message joins the current context. Each message's headers
 * then carry its own producer span's `traceparent`, which is what consumers continue from.
 * (kafkajs's OpenTelemetry instrumentation would stamp the relay's context instead: hence by hand.)
 */
export function startProducerSpans(messages: BusMessage[]): {
  headers: Array<Record<string, string>>;
  end(error?: unknown): void;
} {
  const spans: Span[] = [];
  const headers = messages.map((m) => {
    const stored = m.headers?.traceparent;
    const parent = stored ? contextFromTraceparent(stored) : context.active();
    const span = tracer().startSpan(
      `${m.topic} publish`,
      { kind: SpanKind.PRODUCER, attributes: { 'messaging.system': 'kafka', 'messaging.destination.name': m.topic } },
      parent,
    );
    spans.push(span);
    const out: Record<string, string> = { ...(m.headers ?? {}) };
    if (trace.isSpanContextValid(span.spanContext())) propagation.inject(trace.setSpan(parent, span), out);
    return out;
  });
  return {
    headers,
    end(error) {
      if (!error) kafkaPublished.inc(messages.length);
      for (const span of spans) {
        if (error) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      }
    },
  };
}

/** Runs a message handler in a CONSUMER span continuing the producer's trace, with its request id in scope. */
export function consumeInContext<T>(
  topic: string,
  groupId: string,
  headers: Record<string, string>,
  handle: () => Promise<T>,
): Promise<T> {
  const parent = withRequestScope(propagation.extract(ROOT_CONTEXT, headers), { requestId: headers[REQUEST_ID_HEADER] });
  return inSpan(
    `${topic} process`,
    {
      kind: SpanKind.CONSUMER,
      parent,
      attributes: { 'messaging.system': 'kafka', 'messaging.destination.name': topic, 'messaging.consumer.group.name': groupId },
    },
    handle,
  );
}

export function countConsumed(outcome: 'ok' | 'dead_lettered'): void {
  kafkaConsumed.inc({ outcome });
}
