import { PlatformError } from './errors';

/** What a client is told to wait before retrying when an engine or a subgraph is unreachable: 2 s. */
export const ENGINE_RETRY_AFTER_S = 2;

const DRIVER_UNREACHABLE = /^Mongo(ose)?(ServerSelection|Network|NetworkTimeout|NotConnected|TopologyClosed|PoolCleared)Error$/;
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE']);

/**
 * Whether an error means "an engine or a remote subgraph cannot be reached" (MongoDB driver
 * connection errors, refused or reset sockets), looking through `cause` and `originalError`.
 * Such failures are temporary: the client gets 503 `service_unavailable` with Retry-After, not 500.
 */
export function isUnreachable(e: unknown, depth = 0): boolean {
  if (!e || typeof e !== 'object' || depth > 5) return false;
  const err = e as { name?: unknown; code?: unknown; cause?: unknown; originalError?: unknown; errors?: unknown };
  if (typeof err.name === 'string' && DRIVER_UNREACHABLE.test(err.name)) return true;
  if (typeof err.code === 'string' && SOCKET_CODES.has(err.code)) return true;
  if (err.name === 'FetchError' && typeof err.code === 'string') return true;
  if (Array.isArray(err.errors) && err.errors.some((x) => isUnreachable(x, depth + 1))) return true;
  return isUnreachable(err.cause, depth + 1) || isUnreachable(err.originalError, depth + 1);
}

/** The retriable 503 an unreachable engine or subgraph becomes. */
export const serviceUnavailable = (): PlatformError =>
  new PlatformError(
    'service_unavailable',
    503,
    'a service the platform depends on is unreachable; retry shortly',
    { retry_after_s: ENGINE_RETRY_AFTER_S },
    true,
  );
