import path from 'node:path';
import { defineModule } from '../../../core/area-module';
import { FsBlobStore } from '../../../core/blobs/fs-blob-store';
import { S3BlobStore, s3Client } from '../../../core/blobs/s3-blob-store';
import { OutboxRelay } from '../../../core/events/outbox';
import type { Ports } from '../../../core/ports';
import { assetFilesPort } from './asset-files';
import { AssetsResolver } from './resolvers';
import { assetsRoutes } from './routes';
import { AssetsService } from './service';
import type { AssetsSettings } from '../settings';
import { assetsWorker } from './workers';
import { assetsCdnPlane } from '../delivery';
import { assetModels, RECORD_CHANGES_TOPIC, withRecordChange } from '../records';
import { ClamdScanner, EicarScanner } from '../scanning';
import { AssetTransformsResolver } from '../transforms';
import type { UsageModuleServices } from '../usage';
import { assetsUploadPlane } from '../uploads';
import { bearerAuthenticate } from '../planes';

export interface CoreModuleServices {
  assets: AssetsService;
  relay: OutboxRelay;
  ports: Ports;
}

/**
 * The Assets storage core: buckets, content policy, streamed uploads, records guarded by revisions,
 * versions and branches, delete jobs, transformations, signed CDN delivery, object events.
 */
export const coreModule = defineModule<CoreModuleServices, UsageModuleServices>({
  name: 'core',
  services(ctx, { usage }) {
    const settings = ctx.settings as AssetsSettings;
    const m = assetModels(ctx.conn);
    const root = settings.ASSETS_BLOB_DIR ?? path.resolve(ctx.config.DATA_DIR, 'assets');
    const blobs =
      settings.ASSETS_BLOB_STORE === 's3'
        ? new S3BlobStore({
            client: s3Client({
              endpoint: settings.ASSETS_S3_ENDPOINT,
              region: settings.ASSETS_S3_REGION,
              accessKeyId: settings.ASSETS_S3_ACCESS_KEY_ID,
              secretAccessKey: settings.ASSETS_S3_SECRET_ACCESS_KEY,
            }),
            bucket: settings.ASSETS_S3_BUCKET,
            prefix: settings.ASSETS_S3_PREFIX,
          })
        : new FsBlobStore(root);
    const [host, port] = (settings.ASSETS_CLAMD_ADDRESS ?? '').split(':');
    const scanner = host && port ? new ClamdScanner(host, Number(port)) : new EicarScanner();
    // Writes in this process nudge the relay at once; the idle scan (a collection scan per model on
    // the wire server) only picks up what another process wrote: once a second, as the engine's.
    const relay = new OutboxRelay({ models: [m.Asset, m.Job], bus: ctx.bus, intervalMs: 1_000 });
    const assets = new AssetsService(
      m,
      blobs,
      scanner,
      settings,
      ctx.config,
      () => ctx.topic('objects'),
      () => relay.nudge(),
      {
        // Derived credentials end with their key (docs/decisions/0099); identity answers through the kernel port.
        keyLive: (accountId, keyId) => ctx.ports.get('keyStatus').isLive(accountId, keyId),
        // Each guarded update carries its record change (the webhooks' and the audit's source).
        prepareGuardedUpdate: (ref, update) => withRecordChange(ctx.topic(RECORD_CHANGES_TOPIC), ref, update),
        onTransformComputed: (d) => usage.add(d.accountId, { transformsComputed: 1, transformBytes: d.size }),
      },
    );
    return { assets, relay, ports: ctx.ports };
  },
  resolvers: [AssetsResolver, AssetTransformsResolver],
  routes: assetsRoutes,
  provides: (s, ports) => ports.provide('assetFiles', assetFilesPort(s.assets)),
  workers: (s, ctx) => [
    { name: 'assets-outbox', start: () => s.relay.start(), stop: () => s.relay.stop() },
    assetsWorker(s.assets, ctx.log),
  ],
  http: {
    bridge: async (app, s) => {
      await app.register(async (scope) => assetsUploadPlane(scope, s.assets, bearerAuthenticate(s.ports)));
    },
    cdn: (app, s) => assetsCdnPlane(app, s.assets),
  },
});
