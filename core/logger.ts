import pino, { type Logger } from 'pino';
import { config } from './config';

/**
 * Key names whose values never reach a log line, wherever they sit in the logged object.
 * Matching is by exact key name at any depth (pino's redact paths with wildcards).
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
];

function redactPaths(): string[] {
  const paths: string[] = [];
  for (const k of REDACTED_KEYS) {
    const p = /^[A-Za-z_$][\w$]*$/.test(k) ? k : `["${k}"]`;
    const join = (prefix: string) => (p.startsWith('[') ? `${prefix}${p}` : `${prefix}.${p}`);
    paths.push(p, join('*'), join('*.*'), join('*.*.*'));
  }
  return paths;
}

let root: Logger | undefined;

/** The process logger: JSON lines on stdout (or `LOG_DESTINATION` fd/file), secrets redacted by key. */
export function logger(): Logger {
  if (!root) {
    const dest = process.env.LOG_FILE ? pino.destination({ dest: process.env.LOG_FILE, sync: true }) : undefined;
    root = pino(
      {
        level: config().LOG_LEVEL,
        redact: { paths: redactPaths(), censor: '[redacted]' },
        base: { service: 'platform' },
      },
      dest,
    );
  }
  return root;
}

/** A child logger for one component, e.g. `childLogger('router')`. */
export function childLogger(component: string, bindings: Record<string, unknown> = {}): Logger {
  return logger().child({ component, ...bindings });
}

export type { Logger };
