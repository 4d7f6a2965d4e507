import { defineModule } from '../../../core/area-module';
import { cdnUsageHook, type CountedAssets } from './cdn-usage';
import { UsageCounters, usageModel } from './usage';

export interface UsageModuleServices {
  usage: UsageCounters;
}

/**
 * The usage counters: first in the list, since the core (transformations), the CDN and the AI
 * actions count into them.
 */
export const usageModule = defineModule<UsageModuleServices, object, UsageModuleServices & { assets: CountedAssets }>({
  name: 'usage',
  services: (ctx) => ({ usage: new UsageCounters(usageModel(ctx.conn)) }),
  workers: (s) => [{ name: 'assets-usage', start: () => s.usage.start(), stop: () => s.usage.stop() }],
  // Counts deliveries of the assets CDN (registered before every module's routes, so it sees them all).
  http: { hooks: { cdn: (app, s) => cdnUsageHook(app, s.assets, s.usage) } },
});
