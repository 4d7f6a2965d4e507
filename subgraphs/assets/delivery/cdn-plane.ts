import { create as contentDisposition } from 'content-disposition';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import rangeParser from 'range-parser';
import type { BlobStore } from '../../../core/blobs/blob-store';
import type { AssetDelivery } from './delivery';
import { isHeaderSafe, type AssetDoc, type AssetVersion } from '../records';
import { type DerivativeDoc, decodeSpec, type Transforms } from '../transforms';

/** What the CDN listener needs of Assets: the bytes, the delivery decisions, the transformations. `AssetsService` gives it. */
export type CdnHost = Pick<AssetDelivery, 'anyAsset' | 'publicCurrent' | 'publicDelivery' | 'signedDelivery'> & {
  readonly blobs: Pick<BlobStore, 'read'>;
  readonly transforms: Pick<Transforms, 'named' | 'materialise' | 'verify' | 'source'>;
};

/**
 * A stored `Cache-Control` goes into the header only when it is header-safe (asset-fields.ts); a
 * value stored before the service checked it (CR/LF, controls) is replaced by `no-store`, so the
 * answer is never a 500 nor a split header.
 */
const headerCacheControl = (stored: string | null | undefined) => (stored && isHeaderSafe(stored) ? stored : 'no-store');

/** Signed (private) deliveries are never stored by shared caches. */
const PRIVATE_CACHE_CONTROL = 'private, no-store';

export const notFound = (reply: FastifyReply) =>
  reply
    .status(404)
    .header('Cache-Control', 'no-store')
    .send({ success: false, error: { code: 'assets.not_found', message: 'not found', details: {} } });

/** A strong validator of a version's bytes: their SHA-256. */
const etagOfBytes = (v: AssetVersion) => `"${v.sha256}"`;

/** `If-None-Match`: weak comparison (RFC 9110 8.8.3.2), so `W/"x"` matches `"x"`. */
function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}

/** Whole seconds: what an HTTP-date can say. */
const toSecond = (d: Date) => Math.floor(d.getTime() / 1000);

/**
 * RFC 9110 13.1.5 `If-Range`: may a `Range` be honoured? An entity tag must match the current one
 * by strong comparison (a weak tag never does); an HTTP-date must equal `Last-Modified` exactly,
 * and `Last-Modified` must be a strong validator (8.8.2.2: at least one second older than the
 * answer's `Date`). Anything else, including a value that is neither, sends the whole
 * representation (200), so a download resumed after the bytes changed is never stitched together.
 */
export function ifRangeHolds(header: string | string[] | undefined, etag: string, lastModified: Date, now = new Date()): boolean {
  if (header === undefined) return true;
  // The field is a single value: sent twice, it names no one representation.
  if (Array.isArray(header)) return false;
  const value = header.trim();
  if (value.startsWith('W/')) return false;
  if (value.startsWith('"')) return value === etag;
  const date = Date.parse(value);
  if (Number.isNaN(date) || Number.isNaN(lastModified.getTime())) return false;
  return toSecond(new Date(date)) === toSecond(lastModified) && toSecond(now) - toSecond(lastModified) >= 1;
}

/**
 * Sends one version's bytes with the HTTP caching and range semantics a CDN edge gives:
 * `ETag` + `If-None-Match` (304), `Last-Modified` (the version's creation), one `Range` (206, 416
 * when unsatisfiable; several ranges are answered with the whole body) unless `If-Range` names
 * another representation (200, whole body), `Cache-Control` from the asset, `Content-Disposition` with the
 * original name.
 */
export async function sendVersion(
  req: FastifyRequest,
  reply: FastifyReply,
  assets: CdnHost,
  found: { asset: AssetDoc; version: AssetVersion; region: string },
  cacheControl: string,
): Promise<FastifyReply> {
  const { version, region } = found;
  const etag = etagOfBytes(version);
  const lastModified = new Date(version.createdAt);
  if (!Number.isNaN(lastModified.getTime())) reply.header('Last-Modified', lastModified.toUTCString());
  reply
    .header('ETag', etag)
    .header('Cache-Control', headerCacheControl(cacheControl))
    .header('Accept-Ranges', 'bytes')
    .header('Content-Type', version.mimeType)
    .header('Content-Disposition', contentDisposition(version.originalName, { type: 'inline' }))
    .header('X-Content-Type-Options', 'nosniff');
  if (matchesEtag(req.headers['if-none-match'], etag)) return reply.status(304).send();
  const rangeHeader = req.headers.range;
  const ifRange = req.headers['if-range'];
  if (rangeHeader && version.size > 0 && ifRangeHolds(ifRange, etag, lastModified)) {
    const ranges = rangeParser(version.size, rangeHeader, { combine: true });
    if (ranges === -1) return reply.status(416).header('Content-Range', `bytes */${version.size}`).send();
    if (Array.isArray(ranges) && ranges.type === 'bytes' && ranges.length === 1) {
      const { start, end } = ranges[0];
      reply
        .status(206)
        .header('Content-Range', `bytes ${start}-${end}/${version.size}`)
        .header('Content-Length', String(end - start + 1));
      if (req.method === 'HEAD') return reply.send();
      return reply.send(assets.blobs.read(region, version.sha256, { start, end }));
    }
  }
  reply.status(200).header('Content-Length', String(version.size));
  if (req.method === 'HEAD') return reply.send();
  return reply.send(assets.blobs.read(region, version.sha256));
}

interface DeliveryParams {
  id: string;
  version: string;
  filename: string;
}

/** The `{cdn_url}` listener's asset routes (spec 4.3 delivery addresses). */
export async function assetsCdnPlane(app: FastifyInstance, assets: CdnHost): Promise<void> {
  app.route<{ Params: DeliveryParams }>({
    method: ['GET', 'HEAD'],
    url: '/assets/:id/versions/:version/:filename',
    handler: async (req, reply) => {
      const found = await assets.publicDelivery(req.params.id, req.params.version);
      if (!found) return notFound(reply);
      return sendVersion(req, reply, assets, found, found.asset.cacheControl);
    },
  });

  app.route<{ Params: DeliveryParams; Querystring: { token?: string } }>({
    method: ['GET', 'HEAD'],
    url: '/private/assets/:id/versions/:version/:filename',
    handler: async (req, reply) => {
      const found = await assets.signedDelivery(req.params.id, req.params.version, req.query.token);
      if (!found) return notFound(reply);
      return sendVersion(req, reply, assets, found, PRIVATE_CACHE_CONTROL);
    },
  });

  /** Named transform of a public asset: `/t/{preset}/assets/{id}`. */
  app.route<{ Params: { preset: string; id: string } }>({
    method: ['GET', 'HEAD'],
    url: '/t/:preset/assets/:id',
    handler: async (req, reply) => {
      // The public-delivery decision (cached ~1 s): a ready public asset with a copy, else 404.
      const src = await assets.publicCurrent(req.params.id);
      if (!src || src.asset.type !== 'image') return notFound(reply);
      const def = await assets.transforms.named(src.asset.accountId, req.params.preset);
      if (!def) return notFound(reply);
      const d = await assets.transforms.materialise(src, def.spec);
      return sendDerivative(req, reply, assets, d, src.asset.cacheControl);
    },
  });

  /**
   * Signed transform: `/assets/{id}/tr/{spec}/{filename}?exp=&sig=`. The signature covers the
   * path and the expiry and is checked before anything is read, so a tampered or expired address
   * costs one HMAC (403); an unknown spec or an asset without derivatives is a 404.
   */
  app.route<{ Params: { id: string; spec: string; filename: string }; Querystring: { exp?: string; sig?: string } }>({
    method: ['GET', 'HEAD'],
    url: '/assets/:id/tr/:spec/:filename',
    handler: async (req, reply) => {
      const pathname = req.url.split('?')[0];
      if (!assets.transforms.verify(pathname, req.query.exp, req.query.sig)) {
        return reply
          .status(403)
          .header('Cache-Control', 'no-store')
          .send({
            success: false,
            error: { code: 'assets.signature_invalid', message: 'signature invalid or expired', details: {} },
          });
      }
      const spec = decodeSpec(req.params.spec);
      if (!spec) return notFound(reply);
      const asset = await assets.anyAsset(req.params.id);
      const src = asset && (await assets.transforms.source(asset));
      if (!src) return notFound(reply);
      const d = await assets.transforms.materialise(src, spec);
      return sendDerivative(req, reply, assets, d, PRIVATE_CACHE_CONTROL);
    },
  });
}

async function sendDerivative(
  req: FastifyRequest,
  reply: FastifyReply,
  assets: CdnHost,
  d: DerivativeDoc,
  cacheControl: string,
): Promise<FastifyReply> {
  const etag = `"${d.sha256}"`;
  reply
    .header('ETag', etag)
    .header('Cache-Control', headerCacheControl(cacheControl))
    .header('Content-Type', d.mimeType)
    .header('X-Content-Type-Options', 'nosniff')
    .header('Vary', 'Accept');
  if (matchesEtag(req.headers['if-none-match'], etag)) return reply.status(304).send();
  reply.status(200).header('Content-Length', String(d.size));
  if (req.method === 'HEAD') return reply.send();
  return reply.send(assets.blobs.read(d.region, d.sha256));
}
