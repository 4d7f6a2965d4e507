import { defineModule } from '../../../core/area-module';
import type { ObjectBucketDirectory } from '../../../core/object-buckets';
import { installCdnAccessLog, installUploadAccessLog } from './access-hooks';
import { AccessLogWriter } from './access-log';
import { BucketAnalyticsReader } from './analytics';
import { INVENTORY_OPERATION, InventoryExports } from './inventory';
import { inventoryFilePlane } from './inventory-plane';
import { bucketOpsModels } from './model';
import type { BucketOpsServices } from './services';
import { ObjstoreBuckets } from './objstore-buckets';
import { BucketQuery } from './query';
import { RELOCATION_OPERATION, Relocations } from './relocations';
import { BucketOpsResolver } from './resolvers';
import { bucketOpsRoutes } from './routes';
import { websitePlane } from './website-plane';
import type { CoreModuleServices } from '../storage';
import { bearerAuthenticate } from '../planes';

/** Object-store bucket operations: a module of Assets (its list: `subgraphs/assets/modules.ts`). */
export const bucketOpsModule = defineModule<BucketOpsServices, CoreModuleServices>({
  name: 'bucket-ops',
  services(ctx, { assets }) {
    const m = bucketOpsModels(ctx.conn);
    const buckets = new ObjstoreBuckets(m, assets);
    return {
      bucketOps: {
        buckets,
        relocations: new Relocations(m, assets, buckets, ctx.engine),
        analytics: new BucketAnalyticsReader(m, assets, buckets),
        accessLog: new AccessLogWriter(m, assets, buckets, ctx.log),
        inventory: new InventoryExports(m, assets, buckets, ctx.engine),
        query: new BucketQuery(assets, buckets),
      },
    };
  },
  resolvers: [BucketOpsResolver],
  routes: bucketOpsRoutes,
  provides: (s, ports) => ports.provide('objectBuckets', objectBucketsPort(s)),
  executors: (s) => ({
    [RELOCATION_OPERATION]: (ctx) => s.bucketOps.relocations.run(ctx),
    [INVENTORY_OPERATION]: (ctx) => s.bucketOps.inventory.run(ctx),
  }),
  workers: (s) => [
    { name: 'assets-bucket-access-log', start: () => s.bucketOps.accessLog.start(), stop: () => s.bucketOps.accessLog.stop() },
  ],
  http: {
    // The access hooks go on before any module's routes: the upload routes, the delivery routes.
    hooks: {
      bridge: (app, s) => installUploadAccessLog(app, s.bucketOps.accessLog),
      cdn: (app, s) => installCdnAccessLog(app, s.bucketOps.accessLog),
    },
    bridge: async (app, s) => {
      await app.register(async (scope) =>
        inventoryFilePlane(scope, s.assets, s.bucketOps.inventory, bearerAuthenticate(s.ports)),
      );
    },
    // Website mode.
    cdn: (app, s) => websitePlane(app, s.assets, s.bucketOps.buckets),
  },
});

/**
 * The kernel's `objectBuckets` port (core/object-buckets.ts): object-store events can authorise a
 * subscription on a bucket made here before its first object event. Only marked buckets answer.
 */
const objectBucketsPort = (s: BucketOpsServices): ObjectBucketDirectory => ({
  async findBucket(bucketId: string) {
    const mark = await s.bucketOps.buckets.m.ObjstoreBucket.findById(bucketId).lean<{ accountId: string }>().exec();
    if (!mark) return null;
    const b = await s.bucketOps.buckets.assets.m.Bucket.findOne({ _id: bucketId, accountId: mark.accountId }).lean().exec();
    return b ? { id: bucketId, accountId: mark.accountId, name: b.name } : null;
  },
});
