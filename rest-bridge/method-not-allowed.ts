import type { FastifyInstance } from 'fastify';
import type { EnvelopeKind } from '../core/rest-route';

/** A served method and path (an area row or a byte route) and the envelope its errors use. */
type KnownRoute = { method: string; path: string; envelope: EnvelopeKind };
import { errorEnvelope } from './envelopes';

/**
 * RFC 9110 15.5.6: a known path asked with a method it does not serve — any method, TRACE and
 * QUERY included — is a 405 with `Allow` (the served methods, HEAD beside GET), in the envelope of
 * the path's area, before any body is read: not a 404, so a client learns the path exists.
 */
export function registerMethodNotAllowed(app: FastifyInstance, routes: readonly KnownRoute[]): void {
  const byPath = new Map<string, KnownRoute[]>();
  for (const r of routes) byPath.set(r.path, [...(byPath.get(r.path) ?? []), r]);
  const known = [...byPath].map(([path, rows]) => {
    const served = new Set<string>(rows.map((r) => r.method));
    if (served.has('GET')) served.add('HEAD');
    const pattern = new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '[^/]+')}/?$`);
    // The router prefers literal segments (`/assets/buckets` over `/assets/{assetID}`): so does Allow.
    const literals = path.split('/').filter((w) => w && !w.startsWith('{')).length;
    return { path, pattern, served, literals, envelope: rows[0].envelope };
  });
  app.addHook('onRequest', async (req, reply) => {
    // Only where the router found nothing: a data plane's raw route on a similar path is served.
    if (!req.is404) return;
    const url = req.url.split('?')[0];
    const all = known.filter((k) => k.pattern.test(url));
    const best = Math.max(...all.map((k) => k.literals));
    const matches = all.filter((k) => k.literals === best);
    if (!matches.length || matches.some((k) => k.served.has(req.method))) return;
    const allow = [...new Set(matches.flatMap((k) => [...k.served]))].sort();
    await reply
      .status(405)
      .header('allow', allow.join(', '))
      .send(
        errorEnvelope(matches[0].envelope, 405, {
          code: 'method_not_allowed',
          message: `${req.method} is not served on ${matches[0].path}; use ${allow.join(', ')}`,
          details: { allow },
        }),
      );
    return reply;
  });
}
