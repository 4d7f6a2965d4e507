import type { FastifyInstance } from 'fastify';
import type { AreaRoute, HttpMethod } from '../core/rest-route';
import { errorEnvelope } from './envelopes';
import { toFastifyPath } from './route-paths';

/** Methods the bridge answers 405 for on a known path it does not serve them on. */
const METHODS: readonly (HttpMethod | 'OPTIONS')[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/**
 * RFC 9110 15.5.6: a known path asked with a method it does not serve is a 405 with `Allow` (the
 * served methods, HEAD beside GET), in the envelope of the path's area — not a 404, so a client
 * learns the path exists.
 */
export function registerMethodNotAllowed(app: FastifyInstance, routes: readonly AreaRoute[]): void {
  const byPath = new Map<string, AreaRoute[]>();
  for (const r of routes) byPath.set(r.path, [...(byPath.get(r.path) ?? []), r]);
  for (const [path, rows] of byPath) {
    const served = new Set<string>(rows.map((r) => r.method));
    if (served.has('GET')) served.add('HEAD');
    const allow = [...served].sort().join(', ');
    const envelope = rows[0].envelope;
    for (const method of METHODS.filter((m) => !served.has(m))) {
      app.route({
        method,
        url: toFastifyPath(path),
        handler: async (req, reply) =>
          reply
            .status(405)
            .header('allow', allow)
            .send(
              errorEnvelope(envelope, 405, {
                code: 'method_not_allowed',
                message: `${req.method} is not served on ${path}; use ${allow}`,
                details: { allow: [...served].sort() },
              }),
            ),
      });
    }
  }
}
