import { defineModule } from '../../../core/area-module';
import type { ObjectEvent } from '../../../core/events/object-events';
import { AuditStream, auditModel } from './audit';
import { AssetViewsResolver } from './resolvers';
import { viewRoutes } from './routes';
import type { CoreModuleServices } from '../storage';
import type { UsageModuleServices } from '../usage';
import { fromObjectEvent, fromRecordChange } from '../webhooks';
import { RECORD_CHANGES_TOPIC, type RecordChange } from '../records';

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
