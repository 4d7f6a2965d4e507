import { defineModule } from '../../../core/area-module';
import type { ObjectEvent } from '../../../core/events/object-events';
import { webhookModels } from './model';
import { AssetWebhooksResolver } from './resolvers';
import { webhookRoutes } from './routes';
import { AssetWebhooks } from './service';
import { webhookSettingsSchema } from './settings';
import { emitAll, fromObjectEvent, fromRecordChange } from './sources';
import type { CoreModuleServices } from '../storage';
import { RECORD_CHANGES_TOPIC, type RecordChange } from '../records';

export interface WebhooksModuleServices {
  webhooks: AssetWebhooks;
}

/** Webhooks: endpoints, the events of the object and record-change topics, signed deliveries. */
export const webhooksModule = defineModule<WebhooksModuleServices, CoreModuleServices>({
  name: 'webhooks',
  services: (ctx, { assets }) => ({
    webhooks: new AssetWebhooks(webhookModels(ctx.conn), assets, webhookSettingsSchema.parse(ctx.config.env), ctx.log),
  }),
  resolvers: [AssetWebhooksResolver],
  routes: webhookRoutes,
  consumers: (s, ctx) => [
    {
      name: 'webhooks',
      topics: [ctx.topic('objects'), ctx.topic(RECORD_CHANGES_TOPIC)],
      fromBeginning: true,
      handler: async (m) =>
        emitAll(
          s.webhooks,
          m.topic === ctx.topic(RECORD_CHANGES_TOPIC)
            ? await fromRecordChange(s.assets, m.value as RecordChange)
            : await fromObjectEvent(s.assets, m.value as ObjectEvent),
        ),
    },
  ],
  workers: (s) => [{ name: 'assets-webhook-deliveries', start: () => s.webhooks.start(), stop: () => s.webhooks.stop() }],
});
