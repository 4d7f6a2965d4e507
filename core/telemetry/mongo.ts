import { context, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import mongoose, { type Connection } from 'mongoose';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { boundedLabel, mongoCommandDuration } from './metrics';
import { tracer } from './tracing';

const commandLabel = boundedLabel(50);

/** Commands of the driver's own machinery: connection handshakes, heartbeats, authentication. */
const INTERNAL_COMMANDS = new Set(['hello', 'isMaster', 'ismaster', 'saslStart', 'saslContinue', 'authenticate']);

type Namespace = { db: string };
type CommandFn = (this: unknown, ns: Namespace, cmd: Record<string, unknown>, ...rest: unknown[]) => Promise<unknown>;

let commandsSent = 0;
/** MongoDB commands sent by every connection of this process so far (handshakes and heartbeats aside). */
export const mongoCommandsSent = (): number => commandsSent;

let wrapped: boolean | undefined;

/**
 * MongoDB command durations and spans: one histogram observation per command, and a CLIENT span for
 * each command issued inside a traced request (background scans with no span around them open
 * none). Command documents are never copied onto spans: they hold user data.
 *
 * They come from a wrapper around the driver's `Connection.prototype.command`, the one path every
 * command of every pooled connection takes (how OpenTelemetry's own MongoDB instrumentation hooks
 * the driver). The driver's command monitoring (`monitorCommands`) would give the same figures, but
 * it decodes every reply into plain objects for its event while a cursor decodes the same batch
 * again: on the recovery-points list that second decode was about 7 % of the CPU (decision 0252). When the
 * driver's internals are not where this expects them (a driver upgrade moved them), it falls back
 * to command monitoring on `conn`, so the figures never silently stop.
 */
export function observeMongo(conn: Connection): void {
  if (!observesEveryCommand()) observeByMonitoring(conn);
}

/**
 * Installs the wrapper once per process; false when it could not be, and connections must then be
 * opened with `monitorCommands` for `observeMongo` to see their commands.
 */
export function observesEveryCommand(): boolean {
  wrapped ??= wrapDriverCommands();
  return wrapped;
}

/** The driver's connection class, from the copy of the driver mongoose itself loads. */
function driverConnectionClass(): { prototype: { command?: CommandFn } } | undefined {
  try {
    const mongooseDir = path.dirname(require.resolve('mongoose/package.json'));
    const driverDir = path.dirname(require.resolve('mongodb/package.json', { paths: [mongooseDir] }));
    if (require(driverDir) !== mongoose.mongo) return undefined;
    const cmap = require(path.join(driverDir, 'lib', 'cmap', 'connection.js')) as {
      Connection?: { prototype: { command?: CommandFn } };
    };
    return typeof cmap.Connection?.prototype.command === 'function' ? cmap.Connection : undefined;
  } catch {
    return undefined;
  }
}

function wrapDriverCommands(): boolean {
  const cls = driverConnectionClass();
  if (!cls) return false;
  const original = cls.prototype.command as CommandFn;
  cls.prototype.command = function observedCommand(
    this: unknown,
    ns: Namespace,
    cmd: Record<string, unknown>,
    ...rest: unknown[]
  ) {
    const name = cmd && typeof cmd === 'object' ? Object.keys(cmd)[0] : undefined;
    if (name === undefined || INTERNAL_COMMANDS.has(name)) return original.call(this, ns, cmd, ...rest);
    commandsSent++;
    const started = performance.now();
    const span = startSpan(name, ns?.db);
    return original.call(this, ns, cmd, ...rest).then(
      (reply) => {
        finish(name, 'ok', (performance.now() - started) / 1000, span);
        return reply;
      },
      (err: unknown) => {
        finish(name, 'error', (performance.now() - started) / 1000, span, err);
        throw err;
      },
    );
  };
  return true;
}

function startSpan(commandName: string, databaseName: string | undefined): Span | undefined {
  const parent = context.active();
  if (!trace.getSpan(parent)?.isRecording()) return undefined;
  return tracer().startSpan(
    `mongodb.${commandName}`,
    {
      kind: SpanKind.CLIENT,
      attributes: { 'db.system.name': 'mongodb', 'db.namespace': databaseName, 'db.operation.name': commandName },
    },
    parent,
  );
}

function finish(commandName: string, outcome: 'ok' | 'error', seconds: number, span: Span | undefined, err?: unknown): void {
  mongoCommandDuration.observe({ command: commandLabel(commandName), outcome }, seconds);
  if (!span) return;
  if (outcome === 'error') span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error | undefined)?.name });
  span.end();
}

/** Commands in flight whose span is open; past this many, the oldest are dropped (a reply never came). */
const MAX_OPEN_SPANS = 10_000;

/** The fallback: the driver's command events (they need `monitorCommands` on the connection). */
function observeByMonitoring(conn: Connection): void {
  const client = conn.getClient();
  const open = new Map<number, Span>();
  client.on('commandStarted', (e: { requestId: number; commandName: string; databaseName: string }) => {
    commandsSent++;
    const span = startSpan(e.commandName, e.databaseName);
    if (!span) return;
    if (open.size >= MAX_OPEN_SPANS) {
      const oldest = open.keys().next().value as number;
      open.get(oldest)?.end();
      open.delete(oldest);
    }
    open.set(e.requestId, span);
  });
  const finished =
    (outcome: 'ok' | 'error') => (e: { requestId: number; commandName: string; duration: number; failure?: Error }) => {
      const span = open.get(e.requestId);
      open.delete(e.requestId);
      finish(e.commandName, outcome, e.duration / 1000, span, e.failure);
    };
  client.on('commandSucceeded', finished('ok'));
  client.on('commandFailed', finished('error'));
}
