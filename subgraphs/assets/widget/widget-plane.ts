import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PlatformError, badRequest } from '../../../core/errors';
import type { Principal } from '../../../core/principal';
import type { StagedBlob } from '../../../core/blobs/blob-store';
import { type BucketDoc, assetView } from '../records';
import { etagOf } from '../revisions';
import type { AssetsService } from '../storage';
import { parseUploadFields, type ReadForm, readForm, releaseForm } from '../uploads';
import { sendError } from '../planes';

/** The widget's address (spec 4.3: relative to `{base_url}`, outside `/api/v1`). */
export const WIDGET_PATH = '/assets/widget';
export const CAPABILITY_HEADER = 'x-upload-capability';
/** Headers a browser may send with a widget upload. */
const ALLOWED_HEADERS = ['X-Upload-Capability', 'Content-Type'];
/** How long a browser may cache a preflight answer, in seconds (10 minutes). */
export const PREFLIGHT_MAX_AGE_SECONDS = 600;

/** `scheme://host[:port]` in lower case, as browsers send `Origin` and owners list origins. */
export const normOrigin = (o: string) => o.trim().toLowerCase().replace(/\/+$/, '');

/** Whether a bucket's `allowed_origins` let `origin` read a widget answer (`*` allows any). */
export function originAllowed(bucket: Pick<BucketDoc, 'allowedOrigins'>, origin: string): boolean {
  const want = normOrigin(origin);
  return (bucket.allowedOrigins ?? []).some((o) => o === '*' || normOrigin(o) === want);
}

const header = (req: FastifyRequest, name: string) => {
  const h = req.headers[name];
  return Array.isArray(h) ? h[0] : h;
};

/**
 * Browser uploads with a capability token (from `POST /upload-capabilities`) in
 * `X-Upload-Capability`, with CORS from the target bucket's `allowed_origins`.
 *
 * A preflight carries no capability, so it cannot name the bucket: it is answered for any origin
 * and grants nothing. The upload itself is checked: a request whose `Origin` the bucket does not
 * list is refused (403) before a byte is stored, and only an allowed origin gets
 * `Access-Control-Allow-Origin`. (@fastify/cors was not used: it declares a catch-all `OPTIONS *`
 * route on the shared bridge listener; docs/decisions/0028-assets-external-storage.md.)
 */
export async function widgetPlane(app: FastifyInstance, assets: AssetsService): Promise<void> {
  // The upload plane's scope may already parse multipart for this one (it is inherited).
  if (!app.hasContentTypeParser('multipart/form-data'))
    await app.register(multipart, { limits: { fileSize: Number.MAX_SAFE_INTEGER } });

  app.options(WIDGET_PATH, async (req, reply) => {
    const origin = header(req, 'origin');
    reply.header('Vary', 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers');
    if (!origin || (header(req, 'access-control-request-method') ?? '').toUpperCase() !== 'POST') {
      return reply.status(204).header('Allow', 'POST, OPTIONS').send();
    }
    return reply
      .status(204)
      .header('Access-Control-Allow-Origin', origin)
      .header('Access-Control-Allow-Methods', 'POST')
      .header('Access-Control-Allow-Headers', ALLOWED_HEADERS.join(', '))
      .header('Access-Control-Max-Age', String(PREFLIGHT_MAX_AGE_SECONDS))
      .send();
  });

  app.post(WIDGET_PATH, async (req: FastifyRequest, reply: FastifyReply) => {
    let form: ReadForm | null = null;
    let principal: Principal | null = null;
    const origin = header(req, 'origin');
    reply.header('Vary', 'Origin');
    try {
      const cap = await assets.capabilities.verifyLive(header(req, CAPABILITY_HEADER));
      if (!cap) throw new PlatformError('assets.invalid_capability', 401, 'X-Upload-Capability is missing, invalid or expired');
      const bucket = cap.bucket
        ? await assets.buckets.get(cap.principal.accountId, cap.bucket)
        : await assets.buckets.ensureDefault(cap.principal.accountId);
      if (origin) {
        if (!originAllowed(bucket, origin)) {
          throw new PlatformError('assets.origin_not_allowed', 403, 'this origin is not in the bucket’s allowed_origins', {
            origin,
          });
        }
        reply.header('Access-Control-Allow-Origin', origin).header('Access-Control-Expose-Headers', 'ETag');
      }
      if (!req.isMultipart()) throw badRequest('validation_failed', 'expected a multipart/form-data body');
      principal = cap.principal;
      form = await readForm(req, assets, cap.principal);
      const fields = parseUploadFields(form.fields);
      // The bucket whose origins were checked is the one written to (the capability's, else the default).
      if (fields.bucket && fields.bucket !== bucket._id)
        throw badRequest('validation_failed', 'bucket is fixed by the capability (default: the default bucket)');
      fields.bucket = bucket._id;
      if (cap.folder) fields.folder = cap.folder;
      // The form's quota hold (taken before its first byte) becomes the asset's bytes.
      const asset = await assets.uploads.create(cap.principal, form.staged as StagedBlob, form.fileName, fields, {
        reserved: true,
      });
      form.held = 0;
      assets.nudge();
      reply.header('ETag', etagOf(asset.revision));
      return reply.status(201).send({ success: true, data: assetView(asset, assets.cfg.cdnUrl) });
    } catch (e) {
      if (form && principal) await releaseForm(assets, principal, form).catch(() => undefined);
      return sendError(reply, e, req.log);
    }
  });
}
