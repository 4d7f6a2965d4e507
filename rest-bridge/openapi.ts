import { zodToJsonSchema } from 'zod-to-json-schema';
import type { AreaRoute } from '../core/rest-route';

const errorSchema = {
  type: 'object',
  required: ['success', 'error'],
  properties: {
    success: { const: false },
    error: {
      type: 'object',
      required: ['code', 'message', 'details'],
      properties: { code: { type: 'string' }, message: { type: 'string' }, details: { type: 'object' } },
    },
  },
};

/** OpenAPI 3.1 generated from the route table (what `schema/openapi.json` holds). */
export function buildOpenApi(routes: readonly AreaRoute[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const params = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    const op: Record<string, unknown> = {
      operationId: `${r.area}.${r.operation}`,
      summary: r.summary,
      tags: [r.tag],
      security: [{ bearer: [] }],
      parameters: params,
      responses: {
        [String(r.status)]: {
          description: 'success',
          content: {
            'application/json': {
              schema: { type: 'object', required: ['success', 'data'], properties: { success: { const: true }, data: {} } },
            },
          },
        },
        default: { description: 'error', content: { 'application/json': { schema: errorSchema } } },
      },
    };
    if (r.body) {
      op.requestBody = {
        required: true,
        content: { 'application/json': { schema: zodToJsonSchema(r.body, { target: 'openApi3', $refStrategy: 'none' }) } },
      };
    }
    (paths[r.path] ??= {})[r.method.toLowerCase()] = op;
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Platform API', version: '1' },
    servers: [{ url: '/' }],
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    paths,
  };
}
