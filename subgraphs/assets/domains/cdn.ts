import type { FastifyInstance } from 'fastify';
import type { Domains } from './domains';
import { notFound, sendVersion } from '../delivery';
import type { AssetsService } from '../storage';

/**
 * Custom-domain delivery on the `{cdn_url}` listener: a request whose `Host` is a verified domain
 * gets `/<key>` of that domain's bucket — public, ready assets only, with the same caching and
 * range semantics as the standard addresses. The standard delivery routes keep precedence for
 * paths of their exact shapes (docs/spec-decisions.md).
 */
export async function domainsCdnPlane(app: FastifyInstance, assets: AssetsService, domains: Domains): Promise<void> {
  app.route<{ Params: { '*': string } }>({
    method: ['GET', 'HEAD'],
    url: '/*',
    handler: async (req, reply) => {
      const domain = await domains.byHost(req.headers.host);
      if (!domain) return notFound(reply);
      let key: string;
      try {
        key = decodeURIComponent(req.params['*'] ?? '');
      } catch {
        return notFound(reply);
      }
      if (!key) return notFound(reply);
      const asset = await domains.assetAt(domain, key);
      const found = asset && (await assets.publicCurrent(asset._id));
      if (!found) return notFound(reply);
      return sendVersion(req, reply, assets, found, found.asset.cacheControl);
    },
  });
}
