import type { FastifyInstance } from 'fastify';
import type { AreaContext } from '../../../core/area';
import type { ObjectBucketDirectory } from '../../../core/object-buckets';
import type { OperationExecutor } from '../../../core/operations/engine';
import type { AssetsService } from '../service';
import type { Authenticate } from '../upload-plane';
import { installCdnAccessLog, installUploadAccessLog } from './access-hooks';
import { AccessLogWriter } from './access-log';
import { BucketAnalyticsReader } from './analytics';
import { INVENTORY_OPERATION, InventoryExports } from './inventory';
import { inventoryFilePlane } from './inventory-plane';
import { bucketOpsModels } from './model';
import { ObjstoreBuckets } from './objstore-buckets';
import { BucketQuery } from './query';
import { RELOCATION_OPERATION, Relocations } from './relocations';
import { BucketOpsResolver } from './resolvers';
import { websitePlane } from './website-plane';

export { bucketOpsRoutes } from './routes';

/**
 * Object-store bucket operations (issue 10 items 1 and 6): `/objstore-buckets`, storage, relocation,
 * and the bucket's analytics, access logs, inventory exports, bounded query and website mode.
 * `subgraphs/assets/index.ts` wires it with one line per hook of the area contract.
 */
export interface BucketOpsServices {
  bucketOps: {
    buckets: ObjstoreBuckets;
    relocations: Relocations;
    analytics: BucketAnalyticsReader;
    accessLog: AccessLogWriter;
    inventory: InventoryExports;
    query: BucketQuery;
  };
}

export function bucketOpsServices(ctx: AreaContext<unknown>, assets: AssetsService): BucketOpsServices {
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
}

export const bucketOpsResolvers = [BucketOpsResolver];

export const bucketOpsExecutors = (s: BucketOpsServices): Record<string, OperationExecutor> => ({
  [RELOCATION_OPERATION]: (ctx) => s.bucketOps.relocations.run(ctx),
  [INVENTORY_OPERATION]: (ctx) => s.bucketOps.inventory.run(ctx),
});

export const bucketOpsWorker = (s: BucketOpsServices) => ({
  name: 'assets-bucket-access-log',
  start: () => s.bucketOps.accessLog.start(),
  stop: () => s.bucketOps.accessLog.stop(),
});

/** Bridge listener: the upload access hook (before the upload routes) and the inventory file route. */
export async function bucketOpsBridge(
  app: FastifyInstance,
  assets: AssetsService,
  s: BucketOpsServices,
  authenticate: Authenticate,
): Promise<void> {
  installUploadAccessLog(app, s.bucketOps.accessLog);
  await app.register(async (scope) => inventoryFilePlane(scope, assets, s.bucketOps.inventory, authenticate));
}

/** CDN listener: the access hook (before the delivery routes) and website mode. */
export async function bucketOpsCdn(app: FastifyInstance, assets: AssetsService, s: BucketOpsServices): Promise<void> {
  installCdnAccessLog(app, s.bucketOps.accessLog);
  await websitePlane(app, assets, s.bucketOps.buckets);
}

/**
 * The kernel's `objectBuckets` port (core/object-buckets.ts): object-store events can authorise a
 * subscription on a bucket made here before its first object event. Only marked buckets answer.
 */
export const objectBucketsPort = (s: BucketOpsServices): ObjectBucketDirectory => ({
  async findBucket(bucketId: string) {
    const mark = await s.bucketOps.buckets.m.ObjstoreBucket.findById(bucketId).lean<{ accountId: string }>().exec();
    if (!mark) return null;
    const b = await s.bucketOps.buckets.assets.m.Bucket.findOne({ _id: bucketId, accountId: mark.accountId }).lean().exec();
    return b ? { id: bucketId, accountId: mark.accountId, name: b.name } : null;
  },
});
