import { defineModule } from '../../../core/area-module';
import type { CoreModuleServices } from '../storage';
import type { WebhooksModuleServices } from '../webhooks';
import { bulkModels } from './model';
import { AssetBulkResolver } from './resolvers';
import { bulkRoutes } from './routes';
import { BULK_OPERATION_TYPE, BulkJobs } from './service';

export interface BulkModuleServices {
  bulk: BulkJobs;
}

/** Bulk jobs: one durable operation applies revisioned items; item events go to the webhooks. */
export const bulkModule = defineModule<BulkModuleServices, CoreModuleServices & WebhooksModuleServices>({
  name: 'bulk',
  services: (ctx, { assets, webhooks }) => ({ bulk: new BulkJobs(bulkModels(ctx.conn), assets, ctx.engine, webhooks) }),
  resolvers: [AssetBulkResolver],
  routes: bulkRoutes,
  executors: (s) => ({ [BULK_OPERATION_TYPE]: (ctx) => s.bulk.run(ctx) }),
});
