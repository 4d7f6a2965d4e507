import type { FastifyReply } from 'fastify';
import { ENGINE_RETRY_AFTER_S, isUnreachable } from '../core/engine-errors';

/**
 * Sets `Retry-After` (seconds) on 503 and 429 answers: from the error's `details.retry_after_s`
 * when it says, else the engine default. Other statuses are left alone.
 */
export function withRetryAfter(reply: FastifyReply, status: number, details: unknown): FastifyReply {
  if (status !== 503 && status !== 429) return reply;
  const given = (details as { retry_after_s?: unknown } | undefined)?.retry_after_s;
  const seconds = typeof given === 'number' && given > 0 ? Math.ceil(given) : ENGINE_RETRY_AFTER_S;
  return reply.header('retry-after', String(seconds));
}

/** A bridge-level failure (e.g. authenticating the key) because MongoDB or a subgraph is unreachable. */
export const bridgeUnavailable = (err: unknown) =>
  isUnreachable(err)
    ? {
        code: 'service_unavailable',
        message: 'a service the platform depends on is unreachable; retry shortly',
        details: { retry_after_s: ENGINE_RETRY_AFTER_S },
      }
    : null;
