import pino, { type Logger } from 'pino';
import { config } from './config';
import { redactText, SECRET_NAME } from './operations/redact';
import { logCorrelation } from './telemetry/tracing';

/**
 * Key names whose values never reach a log line, wherever they sit in the logged object (compared
 * without case). Any name matching the secret-name rule of `redactText` is masked too
 * (`providerApiKey`, `X-Api-Key`, `client_secret`, `sessionToken`…).
 */
export const REDACTED_KEYS = [
  'authorization',
  'api_key',
  'apiKey',
  'key',
  'secret',
  'password',
  'token',
  'client_secret',
  'automation_token',
  'public_storefront_token',
  'private_storefront_token',
  'customer_account_secret',
  'session_secret',
  'signing_secret',
  'x-platform-principal',
  'cookie',
  'set-cookie',
];

const MASK = '[redacted]';
const EXACT = new Set(REDACTED_KEYS.map((k) => k.toLowerCase()));
const SECRET_KEY_NAME = new RegExp(`^${SECRET_NAME}$`, 'i');
/** Deeper than this, a logged object is cut (log lines are not data dumps). */
const MAX_DEPTH = 8;

export const isSecretKeyName = (name: string): boolean => EXACT.has(name.toLowerCase()) || SECRET_KEY_NAME.test(name);

/**
 * A copy of `value` safe to log: values under a secret-like key name are masked at any depth
 * (`req.body.variables.input.apiKey`, `headers.Authorization`, `providerApiKey`), every string is
 * passed through the value rules of `redactText` (bearer tokens, `api_key=…`, credentials in URLs,
 * well-known token shapes, long opaque strings), and errors become `{type, message, code, stack}`
 * with the same rules applied, so an error logger never prints a raw secret.
 */
export function redactForLog(value: unknown, depth = 0, seen = new WeakSet<object>()): unknown {
  if (typeof value === 'string') return redactText(value);
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof Date) return value;
  if (seen.has(value)) return '[circular]';
  if (depth >= MAX_DEPTH) return '[truncated]';
  seen.add(value);
  if (value instanceof Error) {
    const e = value as Error & { code?: unknown; statusCode?: unknown };
    const out: Record<string, unknown> = { type: e.name, message: redactText(e.message) };
    if (e.code !== undefined) out.code = redactForLog(e.code, depth + 1, seen);
    if (e.statusCode !== undefined) out.statusCode = e.statusCode;
    if (e.stack) out.stack = redactText(e.stack);
    if (e.cause !== undefined) out.cause = redactForLog(e.cause, depth + 1, seen);
    return out;
  }
  if (Buffer.isBuffer(value)) return `[${value.length} bytes]`;
  if (Array.isArray(value)) return value.map((v) => redactForLog(v, depth + 1, seen));
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return redactForLog((value as { toJSON(): unknown }).toJSON(), depth, seen);
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = isSecretKeyName(k) && v !== undefined && v !== null ? MASK : redactForLog(v, depth + 1, seen);
  }
  return out;
}

let root: Logger | undefined;

/** pino options that make every line of a logger pass through `redactForLog` (merge object, bindings and message). */
export function redactingOptions(): pino.LoggerOptions {
  return {
    formatters: {
      log: (obj) => redactForLog(obj) as Record<string, unknown>,
      bindings: (b) => redactForLog(b) as Record<string, unknown>,
    },
    // The err serializer would otherwise copy the raw error back in after the formatter.
    serializers: { err: (e: unknown) => e },
    hooks: {
      logMethod(args, method) {
        // `log.error(err)` takes its message from the raw error; give it the redacted one instead.
        const [first, second] = args as unknown[];
        if (first instanceof Error && typeof second !== 'string') {
          return method.apply(this, [{ err: first }, redactText(first.message)] as Parameters<typeof method>);
        }
        const safe = args.map((a) => (typeof a === 'string' ? redactText(a) : a));
        return method.apply(this, safe as Parameters<typeof method>);
      },
    },
  };
}

/** The process logger: JSON lines on stdout (or the file `LOG_FILE`), secrets redacted by name and by value. */
export function logger(): Logger {
  if (!root) {
    const dest = process.env.LOG_FILE ? pino.destination({ dest: process.env.LOG_FILE, sync: true }) : undefined;
    // Every line written inside a request, message or operation run names its trace and request.
    root = pino({ level: config().LOG_LEVEL, base: { service: 'platform' }, mixin: logCorrelation, ...redactingOptions() }, dest);
  }
  return root;
}

/** A child logger for one component, e.g. `childLogger('router')`. */
export function childLogger(component: string, bindings: Record<string, unknown> = {}): Logger {
  return logger().child({ component, ...bindings });
}

export type { Logger };
