import { context, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Connection } from 'mongoose';
import { boundedLabel, mongoCommandDuration } from './metrics';
import { tracer } from './tracing';

/** Commands in flight whose span is open; past this many, the oldest are dropped (a reply never came). */
const MAX_OPEN_SPANS = 10_000;
const commandLabel = boundedLabel(50);

interface StartedEvent {
  requestId: number;
  commandName: string;
  databaseName: string;
  address?: string;
}
interface FinishedEvent {
  requestId: number;
  commandName: string;
  duration: number;
  failure?: Error;
}

/**
 * MongoDB command durations and spans from the driver's command monitoring (`monitorCommands`,
 * set by `connectMongo`): one histogram observation per command, and a CLIENT span for each command
 * issued inside a traced request (background scans with no span around them open none). The event
 * is emitted in the caller's async context, which is what parents the span. Command documents are
 * never copied onto spans: they hold user data.
 */
export function observeMongo(conn: Connection): void {
  const client = conn.getClient();
  const open = new Map<number, Span>();
  client.on('commandStarted', (e: StartedEvent) => {
    const parent = context.active();
    if (!trace.getSpan(parent)?.isRecording()) return;
    if (open.size >= MAX_OPEN_SPANS) {
      const oldest = open.keys().next().value as number;
      open.get(oldest)?.end();
      open.delete(oldest);
    }
    open.set(
      e.requestId,
      tracer().startSpan(
        `mongodb.${e.commandName}`,
        {
          kind: SpanKind.CLIENT,
          attributes: { 'db.system.name': 'mongodb', 'db.namespace': e.databaseName, 'db.operation.name': e.commandName },
        },
        parent,
      ),
    );
  });
  const finished = (outcome: 'ok' | 'error') => (e: FinishedEvent) => {
    mongoCommandDuration.observe({ command: commandLabel(e.commandName), outcome }, e.duration / 1000);
    const span = open.get(e.requestId);
    if (!span) return;
    open.delete(e.requestId);
    if (outcome === 'error') span.setStatus({ code: SpanStatusCode.ERROR, message: e.failure?.name });
    span.end();
  };
  client.on('commandSucceeded', finished('ok'));
  client.on('commandFailed', finished('error'));
}
