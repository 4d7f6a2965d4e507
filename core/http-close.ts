import type { FastifyInstance } from 'fastify';

/**
 * How long a closing listener lets requests already being answered finish before it cuts every
 * connection. Fastify's own close only drops connections it sees as idle at that instant; a
 * keep-alive socket it still counts as busy (a client that never read a streamed body, a request
 * that arrived as the listener closed) would otherwise hold shutdown open for the whole
 * keep-alive timeout (72 s) — seen as a test whose `afterAll` timed out, and as a SIGTERM that
 * waits a minute.
 */
export const CLOSE_GRACE_MS = 2000;

/** Stops accepting, waits up to `graceMs` for in-flight answers, then closes every socket. */
export async function closeListener(app: FastifyInstance, graceMs = CLOSE_GRACE_MS): Promise<void> {
  const closing = app.close();
  const timer = setTimeout(() => app.server.closeAllConnections(), graceMs);
  timer.unref();
  try {
    await closing;
  } finally {
    clearTimeout(timer);
  }
}
