import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest, FastifyInstance } from 'fastify';

/** Requests per minute per API key (or per client address without one), on the bridge and on the router. */
export const DEFAULT_RATE_LIMIT_PER_MINUTE = 600;
/** Buckets remembered at most; beyond it the least recently used is forgotten (a full bucket again). */
const MAX_BUCKETS = 100_000;

/**
 * A token bucket per caller: `perMinute` requests may come in a burst, and the bucket refills
 * evenly over the minute. In memory, per process: each bridge or router instance counts its own.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(readonly perMinute: number = DEFAULT_RATE_LIMIT_PER_MINUTE) {}

  /** Takes one request from `id`'s bucket; when empty, how many seconds until one is back. */
  take(id: string, now = Date.now()): { ok: true } | { ok: false; retryAfterS: number } {
    const perMs = this.perMinute / 60_000;
    const prior = this.buckets.get(id);
    const tokens = prior ? Math.min(this.perMinute, prior.tokens + (now - prior.at) * perMs) : this.perMinute;
    this.buckets.delete(id); // re-inserted below: Map order is the LRU order
    if (tokens < 1) {
      this.buckets.set(id, { tokens, at: now });
      return { ok: false, retryAfterS: Math.max(1, Math.ceil((1 - tokens) / perMs / 1000)) };
    }
    this.buckets.set(id, { tokens: tokens - 1, at: now });
    if (this.buckets.size > MAX_BUCKETS) this.buckets.delete(this.buckets.keys().next().value as string);
    return { ok: true };
  }
}

/** Who a request is counted against: its bearer key (hashed, never kept in clear), else its address. */
export function callerId(req: FastifyRequest): string {
  const auth = req.headers.authorization;
  if (typeof auth === 'string' && auth.trim()) return `k:${createHash('sha256').update(auth.trim()).digest('base64url')}`;
  return `ip:${req.ip}`;
}

export const rateLimitedError = (retryAfterS: number) => ({
  code: 'rate_limited',
  message: 'too many requests for this key; retry after the time in Retry-After',
  details: { retry_after_s: retryAfterS },
});

/**
 * Counts every request but health probes against its caller; over the limit, `reject` answers
 * (429 with Retry-After, in the server's own envelope).
 */
export function installRateLimit(
  app: FastifyInstance,
  limiter: RateLimiter,
  reject: (req: FastifyRequest, reply: FastifyReply, retryAfterS: number) => unknown,
): void {
  app.addHook('onRequest', async (req, reply) => {
    const path = req.url.split('?')[0];
    if (path === '/healthz' || path === '/readyz') return;
    const taken = limiter.take(callerId(req));
    if (!taken.ok) {
      reply.header('retry-after', String(taken.retryAfterS));
      await reject(req, reply, taken.retryAfterS);
      return reply;
    }
  });
}
