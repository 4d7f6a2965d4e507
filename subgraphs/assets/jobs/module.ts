import { defineModule } from '../../../core/area-module';
import { AssetJobsResolver } from './resolvers';
import { jobRoutes } from './routes';

/**
 * The job routes across kinds (delete, bulk, AI, migration, workflow run). Its resolver reads the
 * kinds' types, so `modules.ts` imports it last (the schema keeps their order).
 */
export const jobsModule = defineModule({
  name: 'jobs',
  resolvers: [AssetJobsResolver],
  routes: jobRoutes,
});
