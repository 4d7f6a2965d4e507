import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ObjstoreBuckets } from './objstore-buckets';
import { WEBSITE_ROUTE } from './access-hooks';
import { notFound, sendVersion } from '../delivery';
import type { AssetDoc } from '../records';
import type { AssetsService } from '../storage';
import { noteAccess } from '../planes';

/**
 * Website mode on the CDN (`{cdn_url}/w/{bucketID}/{key}`): a key ending in `/` (or the bucket
 * root) serves `<key><index object>`; an object that is missing, private or not ready serves the
 * error object with status 404 (or the plain 404 without one). Only public, ready objects are ever
 * served — the same delivery decision as `/assets/{id}/…` (cached ~1 s).
 */
export async function websitePlane(app: FastifyInstance, assets: AssetsService, buckets: ObjstoreBuckets): Promise<void> {
  const deliverable = async (accountId: string, bucketId: string, key: string) => {
    // Exactly the `asset_key` unique index: no scan.
    const a = await assets.m.Asset.findOne({ accountId, bucketId, key }, { _id: 1 }).lean<Pick<AssetDoc, '_id'>>().exec();
    return a ? assets.publicCurrent(a._id) : null;
  };

  app.route<{ Params: { bucketID: string; '*': string } }>({
    method: ['GET', 'HEAD'],
    url: WEBSITE_ROUTE,
    handler: async (req: FastifyRequest<{ Params: { bucketID: string; '*': string } }>, reply: FastifyReply) => {
      const mark = await buckets.markOf(req.params.bucketID);
      if (!mark?.website) return notFound(reply);
      const raw = req.params['*'] ?? '';
      const key = raw === '' || raw.endsWith('/') ? `${raw}${mark.website.indexObject}` : raw;
      noteAccess(req, { bucketId: mark._id, key });
      const found = await deliverable(mark.accountId, mark._id, key);
      if (found) return sendVersion(req, reply, assets, found, found.asset.cacheControl);
      const errorObject = mark.website.errorObject;
      const err = errorObject ? await deliverable(mark.accountId, mark._id, errorObject) : null;
      if (!err) return notFound(reply);
      reply
        .status(404)
        .header('Content-Type', err.version.mimeType)
        .header('Cache-Control', 'no-store')
        .header('X-Content-Type-Options', 'nosniff')
        .header('Content-Length', String(err.version.size));
      if (req.method === 'HEAD') return reply.send();
      return reply.send(assets.blobs.read(err.region, err.version.sha256));
    },
  });
}
