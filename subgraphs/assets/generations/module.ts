import { defineModule } from '../../../core/area-module';
import { IdempotencyStore } from '../../../core/idempotency';
import { AssetGenerationsResolver } from './resolvers';
import { generationRoutes } from './routes';
import { Generations } from './service';
import type { AiModuleServices } from '../ai';
import type { CoreModuleServices } from '../storage';

export interface GenerationsModuleServices {
  generations: Generations;
}

/** Generated images (an AI job), idempotent by key. */
export const generationsModule = defineModule<GenerationsModuleServices, CoreModuleServices & AiModuleServices>({
  name: 'generations',
  services(ctx, { assets, aiJobs }) {
    const idempotency = new IdempotencyStore(ctx.conn, {
      conflict: 'assets.idempotency_conflict',
      inProgress: 'assets.idempotency_in_progress',
    });
    return { generations: new Generations(assets, aiJobs, idempotency) };
  },
  resolvers: [AssetGenerationsResolver],
  routes: generationRoutes,
});
