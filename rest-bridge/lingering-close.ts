import type { FastifyInstance } from 'fastify';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/** Longest a refused body is read and thrown away after its answer (nginx's `lingering_time`). */
export const LINGER_MS = 30_000;
/** A client that sends nothing for this long is done (nginx's `lingering_timeout`). */
export const LINGER_IDLE_MS = 5_000;
/** Most bytes read and thrown away after an answer. */
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;
const CHECK_MS = 100;

/**
 * Lingering close for a body refused while it arrives (a JSON body over its limit, an upload past
 * its session's size, quota or policy, a broken form): the answer goes out while the client still
 * sends. Closing then — with bytes unread in the socket — makes the kernel reset the connection, and
 * a reset that reaches the client before it read the answer loses it (Node's `fetch` reports "fetch
 * failed", curl "Connection reset"); a request stream a byte route's pipeline destroyed stops taking
 * the body instead, and a client that sends its whole body before reading waits until the keep-alive
 * timeout resets it.
 *
 * So, as nginx does, the rest of the body is read and thrown away after the answer, bounded: at most
 * LINGER_MAX_BYTES and LINGER_MS, and LINGER_IDLE_MS without a byte; past a bound the connection is
 * closed. The answer keeps the connection open (no `Connection: close`, which the body parser sets on
 * its refusals): the server's HTTP parser frames the body, so once it has all arrived the connection
 * is reused as any other.
 *
 * One hook on the listener's root: every route and byte route below it is covered.
 */
export function installLingeringClose(app: FastifyInstance): void {
  app.addHook('onSend', async (req, reply) => {
    const socket = reply.raw.socket;
    if (req.raw.complete || !socket) return;
    reply.removeHeader('connection');
    reply.raw.once('finish', () => linger(req.raw, socket));
  });
}

function linger(req: IncomingMessage, socket: Socket): void {
  if (req.complete || socket.destroyed) return;
  // Node's own "pull the bytes off the wire" for a request whose reader stopped: what the parser
  // takes next is dropped instead of pushed into a stream that no one reads (or that is destroyed).
  (req as IncomingMessage & { _dump?: () => void })._dump?.();
  socket.resume();
  const started = Date.now();
  const first = socket.bytesRead;
  let seen = first;
  let lastByteAt = started;
  // One listener per lingering, removed with its timer as soon as the body has all arrived (the
  // request's `end`), not at the timer's next look: a client that sends its next request at once
  // (a fuzzer on one kept-alive connection) would otherwise stack one per refused request.
  const stop = () => {
    clearInterval(timer);
    socket.off('close', stop);
    req.off('end', stop);
  };
  const timer = setInterval(() => {
    if (req.complete || socket.destroyed) return stop();
    const now = Date.now();
    if (socket.bytesRead !== seen) {
      seen = socket.bytesRead;
      lastByteAt = now;
    }
    if (seen - first > LINGER_MAX_BYTES || now - started > LINGER_MS || now - lastByteAt > LINGER_IDLE_MS) {
      stop();
      socket.destroy();
    }
  }, CHECK_MS);
  timer.unref();
  socket.once('close', stop);
  req.once('end', stop);
}
