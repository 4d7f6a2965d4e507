import type { FastifyInstance } from 'fastify';
import type { Logger } from './logger';
import { installHttpTelemetry } from './telemetry/http';

/**
 * One line per answered request: method, route template (`/api/v1/publisher/projects/:id`, never
 * the filled-in path, which can carry ids users consider private), status, duration and request id.
 * Never headers, query strings or bodies: those are where keys and secrets travel.
 * The same hook point traces the listener and feeds its request metrics (./telemetry/http.ts).
 */
export function installAccessLog(app: FastifyInstance, log: Logger, component: string): void {
  installHttpTelemetry(app, component);
  app.addHook('onResponse', async (req, reply) => {
    log.info(
      {
        access: component,
        method: req.method,
        route: req.routeOptions?.url ?? '(no route)',
        status: reply.statusCode,
        durationMs: Math.round(reply.elapsedTime * 10) / 10,
        requestId: req.id,
      },
      'request',
    );
  });
}
