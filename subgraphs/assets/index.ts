import path from 'node:path';
import type { z } from 'zod';
import { defineArea } from '../../core/area';
import { OutboxRelay } from '../../core/events/outbox';
import type { Ports } from '../../core/ports';
import { assetsCdnPlane } from './cdn-plane';
import { FsBlobStore } from './fs-blob-store';
import { S3BlobStore, s3Client } from './s3-blob-store';
import { assetModels } from './model';
import { AssetsResolver } from './resolvers';
import { assetsRoutes } from './routes';
import { AssetTransformsResolver } from './transform-resolvers';
import { ClamdScanner, EicarScanner } from './scanner';
import { AssetsService } from './service';
import { type AssetsSettings, assetsSettingsSchema } from './settings';
import { assetsUploadPlane, bearerAuthenticate } from './upload-plane';
import { assetsWorker } from './workers';
import { organisationModels } from './collections/model';
import { AssetOrganisationResolver } from './collections/resolvers';
import { collectionRoutes } from './collections/routes';
import { Organisation } from './collections/service';

export { AssetsService } from './service';

export interface AssetsServices {
  assets: AssetsService;
  relay: OutboxRelay;
  ports: Ports;
  /** Collections and saved searches (issue 17). */
  organisation: Organisation;
}

/**
 * The Assets storage core (issue 9): buckets, content policy, streamed uploads, records guarded by
 * revisions, versions and branches, delete jobs, signed CDN delivery, object events.
 */
export default defineArea<AssetsServices, AssetsSettings>({
  name: 'assets',
  portOffset: 2,
  // The kernel's ZodType<C> wants input = output; these settings are strings in, numbers out.
  config: assetsSettingsSchema as unknown as z.ZodType<AssetsSettings>,
  services(ctx) {
    const m = assetModels(ctx.conn);
    const root = ctx.settings.ASSETS_BLOB_DIR ?? path.resolve(ctx.config.DATA_DIR, 'assets');
    const blobs =
      ctx.settings.ASSETS_BLOB_STORE === 's3'
        ? new S3BlobStore({
            client: s3Client({
              endpoint: ctx.settings.ASSETS_S3_ENDPOINT,
              region: ctx.settings.ASSETS_S3_REGION,
              accessKeyId: ctx.settings.ASSETS_S3_ACCESS_KEY_ID,
              secretAccessKey: ctx.settings.ASSETS_S3_SECRET_ACCESS_KEY,
            }),
            bucket: ctx.settings.ASSETS_S3_BUCKET,
            prefix: ctx.settings.ASSETS_S3_PREFIX,
          })
        : new FsBlobStore(root);
    const [host, port] = (ctx.settings.ASSETS_CLAMD_ADDRESS ?? '').split(':');
    const scanner = host && port ? new ClamdScanner(host, Number(port)) : new EicarScanner();
    const relay = new OutboxRelay({ models: [m.Asset, m.Job], bus: ctx.bus });
    const assets = new AssetsService(
      m,
      blobs,
      scanner,
      ctx.settings,
      ctx.config,
      () => ctx.topic('objects'),
      () => relay.nudge(),
    );
    const organisation = new Organisation(organisationModels(ctx.conn), assets);
    return { assets, relay, ports: ctx.ports, organisation };
  },
  subgraph: (s) => ({
    resolvers: [AssetsResolver, AssetTransformsResolver, AssetOrganisationResolver],
    // The second argument (all the area's services) lets a resolver reach the service it wraps.
    createResolver: (cls) => new cls(s?.assets, s),
  }),
  routes: [...assetsRoutes, ...collectionRoutes],
  workers: (s, ctx) => [
    { name: 'assets-outbox', start: () => s.relay.start(), stop: () => s.relay.stop() },
    assetsWorker(s.assets, ctx.log),
  ],
  http: {
    bridge: (app, s) => assetsUploadPlane(app, s.assets, bearerAuthenticate(s.ports)),
    cdn: (app, s) => assetsCdnPlane(app, s.assets),
  },
});
