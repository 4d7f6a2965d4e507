import type { FastifyInstance } from 'fastify';
import { installRateLimit, RateLimiter, rateLimitedError } from '../core/rate-limit';

/** The router's per-key limit: 429 with Retry-After and a GraphQL error carrying code and status. */
export function installRouterRateLimit(app: FastifyInstance, perMinute?: number): void {
  installRateLimit(app, new RateLimiter(perMinute), (_req, reply, retryAfterS) => {
    const e = rateLimitedError(retryAfterS);
    return reply
      .status(429)
      .send({ errors: [{ message: e.message, extensions: { code: e.code, status: 429, details: e.details } }] });
  });
}
