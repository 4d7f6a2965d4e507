import { defineModule } from '../../../core/area-module';
import type { ObjectEvent } from '../../../core/events/object-events';
import type { CoreModuleServices } from '../storage/module';
import { fromObjectEvent, fromRecordChange, RECORD_CHANGES_TOPIC, type RecordChange } from '../webhooks/sources';
import { AuditStream, auditModel } from './audit';
import { cdnUsageHook } from '../usage/cdn-usage';
import { AssetViewsResolver } from './resolvers';
import { viewRoutes } from './routes';
import { UsageCounters, usageModel } from '../usage/usage';

export interface UsageModuleServices {
  usage: UsageCounters;
}

/**
 * The usage counters: first in the list, since the core (transformations), the CDN and the AI
 * actions count into them.
 */
export const usageModule = defineModule<UsageModuleServices, object, UsageModuleServices & CoreModuleServices>({
  name: 'usage',
  services: (ctx) => ({ usage: new UsageCounters(usageModel(ctx.conn)) }),
  workers: (s) => [{ name: 'assets-usage', start: () => s.usage.start(), stop: () => s.usage.stop() }],
  // Counts deliveries of the assets CDN (registered before every module's routes, so it sees them all).
  http: { hooks: { cdn: (app, s) => cdnUsageHook(app, s.assets, s.usage) } },
});

export interface ViewsModuleServices {
  audit: AuditStream;
}

/** The usage views and the audit stream (which records the events the webhooks fan out, from the same two topics). */
export const viewsModule = defineModule<ViewsModuleServices, CoreModuleServices & UsageModuleServices>({
  name: 'views',
  services: (ctx, { assets }) => ({ audit: new AuditStream(auditModel(ctx.conn), assets) }),
  resolvers: [AssetViewsResolver],
  routes: viewRoutes,
  consumers: (s, ctx) => [
    {
      name: 'audit-events',
      topics: [ctx.topic('objects'), ctx.topic(RECORD_CHANGES_TOPIC)],
      fromBeginning: true,
      handler: async (m) =>
        s.audit.record(
          m.topic === ctx.topic(RECORD_CHANGES_TOPIC)
            ? await fromRecordChange(s.assets, m.value as RecordChange)
            : await fromObjectEvent(s.assets, m.value as ObjectEvent),
        ),
    },
  ],
});
