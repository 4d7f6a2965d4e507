import { type ByteRoute, byteOperation, json } from '../core/rest-byte-route';

/**
 * The OpenAPI description of the bridge's own operational routes (rest-bridge/server.ts). The
 * areas' byte routes (uploads, signed inbound webhooks, downloads, the MCP endpoint) are described
 * beside their data planes, in `subgraphs/<area>/byte-routes.ts`, and handed to the contract
 * through each area definition's `byteRoutes` (docs/decisions/0105-openapi-byte-routes.md, 0296).
 */
export const PLATFORM_ROUTES: readonly ByteRoute[] = [
  {
    method: 'GET',
    path: '/healthz',
    envelope: 'standard',
    operation: byteOperation('platform.healthz', 'platform', 'Liveness: the process answers', 'none', {
      responses: {
        '200': {
          description: 'alive',
          content: json({
            type: 'object',
            required: ['status'],
            additionalProperties: false,
            properties: { status: { const: 'ok' } },
          }),
        },
      },
    }),
  },
  {
    method: 'GET',
    path: '/readyz',
    envelope: 'standard',
    operation: byteOperation('platform.readyz', 'platform', 'Readiness: MongoDB reachable (Kafka down is `degraded`)', 'none', {
      responses: Object.fromEntries(
        [
          ['200', 'ready'],
          ['503', 'not ready'],
        ].map(([s, d]) => [
          s,
          {
            description: d,
            content: json({
              type: 'object',
              required: ['status', 'checks'],
              additionalProperties: false,
              properties: {
                status: { type: 'string', enum: ['ready', 'not_ready'] },
                checks: { type: 'object', additionalProperties: { type: 'string' } },
              },
            }),
          },
        ]),
      ),
    }),
  },
  {
    method: 'GET',
    path: '/api/v1/openapi.json',
    envelope: 'standard',
    operation: byteOperation('platform.openapi', 'platform', 'This document', 'none', {
      responses: { '200': { description: 'OpenAPI 3.1', content: json({ type: 'object', required: ['openapi', 'paths'] }) } },
    }),
  },
  {
    method: 'GET',
    path: '/metrics',
    envelope: 'standard',
    operation: byteOperation('platform.metrics', 'platform', "The process's Prometheus metrics", 'none', {
      responses: {
        '200': {
          description: 'Prometheus text exposition format 0.0.4',
          content: { 'text/plain': { schema: { type: 'string' } } },
        },
      },
    }),
  },
];
