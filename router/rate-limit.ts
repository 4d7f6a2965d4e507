import type { FastifyInstance } from 'fastify';
import { authFailuresError, type EdgeLimits, installRateLimit, rateLimitedError } from '../core/rate-limit';

/** The router's limits (core/rate-limit.ts): 429 with Retry-After and a GraphQL error carrying code and status. */
export function installRouterRateLimit(app: FastifyInstance, limits: EdgeLimits): void {
  installRateLimit(app, limits, (_req, reply, retryAfterS, reason) => {
    const e = reason === 'auth_failures' ? authFailuresError(retryAfterS) : rateLimitedError(retryAfterS);
    return reply
      .status(429)
      .send({ errors: [{ message: e.message, extensions: { code: e.code, status: 429, details: e.details } }] });
  });
}
