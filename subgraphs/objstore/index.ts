import { defineArea } from '../../core/area';
import { objstoreRoutes } from './routes';
import { ObjstoreResolver } from './resolvers';
import { ObjstoreService } from './service';
import { objstoreConfig } from './settings';
import { CONSUMED_TOPICS, FANOUT_GROUP } from './events';

export { ObjstoreService } from './service';

/** Object-store events: subscriptions on buckets, pull queue with fenced claims, signed push. */
export default defineArea({
  name: 'objstore',
  portOffset: 3,
  config: objstoreConfig,
  services: (ctx): ObjstoreService => new ObjstoreService(ctx.conn, ctx.settings, ctx.ports),
  subgraph: (svc) => ({
    resolvers: [ObjstoreResolver],
    createResolver: (cls) => new cls(svc),
  }),
  consumers: (svc, ctx) => [
    {
      name: FANOUT_GROUP,
      // Another area's topic: `${prefix}.assets.objects`, not one of ours (`ctx.topic`).
      topics: [`${ctx.topicPrefix}.${CONSUMED_TOPICS.objects}`],
      fromBeginning: true,
      handler: async (m) => {
        await svc.fanout.handle(m.value);
      },
    },
  ],
  workers: (svc) => [svc.push],
  routes: objstoreRoutes,
});
