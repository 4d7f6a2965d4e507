import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AccessLogWriter, RawAccess } from './access-log';
import type { AccessOperation } from './model';
import { accessNoteOf, noteAccess } from '../planes';

const num = (v: unknown) => {
  const n = Number(Array.isArray(v) ? v[0] : v);
  return Number.isFinite(n) && n > 0 ? n : 0;
};

function entry(req: FastifyRequest, reply: FastifyReply, operation: AccessOperation): RawAccess {
  return {
    operation,
    status: reply.statusCode,
    bytesIn: num(req.headers['content-length']),
    bytesOut: req.method === 'HEAD' ? 0 : num(reply.getHeader('content-length')),
    requestId: String(req.id),
    accessKeyId: null,
    at: new Date(),
    ...accessNoteOf(req),
  };
}

/** CDN routes that address an object by its asset id (`:id`), and the website route. */
const CDN_ASSET_ROUTES = new Set([
  '/assets/:id/versions/:version/:filename',
  '/private/assets/:id/versions/:version/:filename',
  '/t/:preset/assets/:id',
  '/assets/:id/tr/:spec/:filename',
]);
export const WEBSITE_ROUTE = '/w/:bucketID/*';

/**
 * The CDN listener's access hook: after the answer went out (`onResponse`), one `record` — a push
 * onto the writer's in-memory batch. Nothing here awaits I/O or can fail the response.
 */
export function installCdnAccessLog(app: FastifyInstance, writer: AccessLogWriter): void {
  app.addHook('onResponse', (req, reply, done) => {
    try {
      const route = req.routeOptions?.url ?? '';
      const op: AccessOperation = req.method === 'HEAD' ? 'head_object' : 'get_object';
      if (CDN_ASSET_ROUTES.has(route)) {
        writer.record({ ...entry(req, reply, op), assetId: (req.params as { id?: string }).id });
      } else if (route === WEBSITE_ROUTE) {
        const e = entry(req, reply, op);
        if (e.bucketId) writer.record(e);
      }
    } catch {
      // best effort: a log entry never costs a response
    }
    done();
  });
}

const UPLOAD_ROUTES: Record<string, AccessOperation> = {
  'POST /api/v1/assets/upload': 'put_object',
  'PUT /api/v1/assets/:id/replace': 'replace_object',
};

/**
 * The bridge's upload hook: reads the bucket and key from the upload's own answer (`onSend`, only
 * on these two routes and only for a success, a small JSON object) and records after the response.
 */
export function installUploadAccessLog(app: FastifyInstance, writer: AccessLogWriter): void {
  app.addHook('onSend', (req, reply, payload, done) => {
    const op = UPLOAD_ROUTES[`${req.method} ${req.routeOptions?.url ?? ''}`];
    if (op && reply.statusCode < 300 && typeof payload === 'string') {
      try {
        const data = (JSON.parse(payload) as { data?: { bucket?: string; key?: string; size?: number } }).data;
        if (data?.bucket) noteAccess(req, { bucketId: data.bucket, key: data.key ?? null });
      } catch {
        // not JSON: nothing to note
      }
    }
    done(null, payload);
  });
  app.addHook('onResponse', (req, reply, done) => {
    try {
      const op = UPLOAD_ROUTES[`${req.method} ${req.routeOptions?.url ?? ''}`];
      if (op) {
        const e = entry(req, reply, op);
        if (e.bucketId || e.assetId) writer.record(e);
        else if (req.params && (req.params as { id?: string }).id)
          writer.record({ ...e, assetId: (req.params as { id: string }).id });
      }
    } catch {
      // best effort
    }
    done();
  });
}
