import type { FastifyInstance, FastifyReply } from 'fastify';
import {
  HLS_SEGMENT_MIME,
  VIDEO_KINDS,
  VIDEO_PROFILES,
  playlistFor,
  type VideoKind,
  type VideoOutputDoc,
  type VideoOutputs,
} from './outputs';
import type { AssetsService } from '../storage';
import type { AssetDoc } from '../records';

/** How long a first request waits for its output before answering 202 (the job goes on). */
export const VIDEO_WAIT_MS = 15_000;
const POLL_MS = 150;
const notFound = (reply: FastifyReply) =>
  reply
    .status(404)
    .header('Cache-Control', 'no-store')
    .send({ success: false, error: { code: 'assets.not_found', message: 'not found', details: {} } });

/**
 * `{cdn_url}/assets/{id}/video/{kind}/{profile}` (spec 4.3): a public ready video's output, or a
 * private one's with the signed-delivery `token` of its current version (the same grant and
 * download count as the private version address). Anything not deliverable is a 404, before any
 * work is queued.
 */
export async function videoCdnPlane(app: FastifyInstance, assets: AssetsService, video: VideoOutputs): Promise<void> {
  /** The asset's current version when the caller may have it (public, or a private one's token). */
  const deliverable = async (id: string, token: string | undefined) => {
    const asset = await assets.anyAsset(id);
    if (!asset || asset.type !== 'video') return null;
    const found =
      asset.visibility === 'public'
        ? await assets.publicCurrent(id)
        : await assets.signedDelivery(id, String(asset.currentVersion), token);
    return found && found.version.number === asset.currentVersion ? { asset, found } : null;
  };
  const cacheControl = (asset: AssetDoc, found: { asset: AssetDoc }) =>
    asset.visibility === 'public' ? found.asset.cacheControl : 'private, no-store';

  // An HLS segment of a ready playlist (the playlist names them `{profile}/{n}.ts`).
  app.route<{ Params: { id: string; profile: string; segment: string }; Querystring: { token?: string } }>({
    method: ['GET', 'HEAD'],
    url: '/assets/:id/video/hls/:profile/:segment',
    handler: async (req, reply) => {
      const { id, profile, segment } = req.params;
      const n = /^(0|[1-9][0-9]{0,5})\.ts$/.exec(segment);
      if (!n || !(profile in VIDEO_PROFILES)) return notFound(reply);
      const ok = await deliverable(id, req.query.token);
      if (!ok) return notFound(reply);
      const out = await video.existing(ok.found.version.sha256, 'hls', profile);
      const seg = out?.status === 'ready' && out.region ? out.segments?.[Number(n[1])] : undefined;
      if (!out?.region || !seg) return notFound(reply);
      reply
        .header('ETag', `"${seg.sha256}"`)
        .header('Cache-Control', cacheControl(ok.asset, ok.found))
        .header('Content-Type', HLS_SEGMENT_MIME)
        .header('X-Content-Type-Options', 'nosniff')
        .header('Content-Length', String(seg.size));
      if (req.method === 'HEAD') return reply.status(200).send();
      return reply.status(200).send(assets.blobs.read(out.region, seg.sha256));
    },
  });

  app.route<{ Params: { id: string; kind: string; profile: string }; Querystring: { token?: string } }>({
    method: ['GET', 'HEAD'],
    url: '/assets/:id/video/:kind/:profile',
    handler: async (req, reply) => {
      const { id, kind, profile } = req.params;
      if (!(VIDEO_KINDS as readonly string[]).includes(kind) || !(profile in VIDEO_PROFILES)) return notFound(reply);
      const ok = await deliverable(id, req.query.token);
      if (!ok) return notFound(reply);
      const { asset, found } = ok;
      let out: VideoOutputDoc | null = await video.request(found.asset, found.version, kind as VideoKind, profile);
      const until = Date.now() + VIDEO_WAIT_MS;
      while (out && out.status === 'queued' && Date.now() < until) {
        await new Promise((r) => setTimeout(r, POLL_MS));
        out = await video.get(out._id);
      }
      if (!out || out.status === 'failed' || !out.region || !out.sha256) {
        if (out?.status === 'queued')
          return reply
            .status(202)
            .header('Retry-After', '2')
            .header('Cache-Control', 'no-store')
            .send({ success: true, data: { status: 'processing' } });
        return notFound(reply);
      }
      if (out.kind === 'hls') {
        // Written per request: a private video's segments carry the same token as its playlist.
        const query = asset.visibility === 'public' || !req.query.token ? '' : `?token=${encodeURIComponent(req.query.token)}`;
        const body = playlistFor(profile, out.segments ?? [], query);
        reply
          .header('Cache-Control', cacheControl(asset, found))
          .header('Content-Type', out.mimeType)
          .header('X-Content-Type-Options', 'nosniff');
        return reply.status(200).send(req.method === 'HEAD' ? undefined : body);
      }
      reply
        .header('ETag', `"${out.sha256}"`)
        .header('Cache-Control', cacheControl(asset, found))
        .header('Content-Type', out.mimeType)
        .header('X-Content-Type-Options', 'nosniff')
        .header('Content-Length', String(out.size));
      if (req.method === 'HEAD') return reply.status(200).send();
      return reply.status(200).send(assets.blobs.read(out.region, out.sha256));
    },
  });
}
