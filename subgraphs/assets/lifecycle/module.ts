import { z } from 'zod';
import { defineModule } from '../../../core/area-module';
import { periodicWorker } from '../../../core/periodic-worker';
import { Clock } from './clock';
import { lifecycleRuleModel } from './model';
import { AssetLifecycleResolver } from './resolvers';
import { lifecycleRoutes } from './routes';
import { LifecycleRules } from './rules';
import type { CoreModuleServices } from '../storage';

export const lifecycleSettingsSchema = z.object({
  /** How often the lifecycle worker looks at the rules, in ms (1 minute). */
  ASSETS_LIFECYCLE_INTERVAL_MS: z.coerce.number().int().positive().default(60_000),
  /** Test clock: how far ahead of the wall clock rule ages are judged, in ms (0). */
  ASSETS_CLOCK_OFFSET_MS: z.coerce.number().int().default(0),
});

export interface LifecycleModuleServices {
  lifecycle: LifecycleRules;
}

/** Lifecycle rules: a worker applies each due rule to the assets it selects. */
export const lifecycleModule = defineModule<LifecycleModuleServices, CoreModuleServices>({
  name: 'lifecycle',
  services(ctx, { assets }) {
    const settings = lifecycleSettingsSchema.parse(ctx.config.env);
    const clock = new Clock(settings.ASSETS_CLOCK_OFFSET_MS);
    return { lifecycle: new LifecycleRules(lifecycleRuleModel(ctx.conn), assets, clock, ctx.log) };
  },
  resolvers: [AssetLifecycleResolver],
  routes: lifecycleRoutes,
  workers: (s, ctx) => [
    periodicWorker('assets-lifecycle', lifecycleSettingsSchema.parse(ctx.config.env).ASSETS_LIFECYCLE_INTERVAL_MS, ctx.log, () =>
      s.lifecycle.runDue(),
    ),
  ],
});
