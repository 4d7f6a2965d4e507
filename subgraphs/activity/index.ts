import { defineArea } from '../../core/area';
import { periodicWorker } from '../../core/periodic-worker';
import { REDRIVE_AFTER_MS } from './agent-actions';
import { agentsAct } from './cli';
import { ACTIVITY_TOPICS } from './events';
import { activityFeeds } from './feeds';
import { ActivityResolver } from './resolvers';
import { activityRoutes } from './routes';
import { ActivityService } from './service';

export { ActivityService } from './service';

/**
 * Operation and agent activity (spec 2.6, 2.7, 4.6, 4.7): projections of every activity source
 * (the kernel's operations and each area's declared sources) into read models, contract-v1 reads,
 * agent actions with safe approval decisions, and live graphql-ws feeds.
 */
export default defineArea<ActivityService>({
  name: 'activity',
  portOffset: 7,
  services: (ctx) =>
    new ActivityService({
      conn: ctx.conn,
      bus: ctx.bus,
      engine: ctx.engine,
      ports: ctx.ports,
      log: ctx.log,
      topicOf: (name) => `${ctx.topicPrefix}.${name}`,
    }),
  provides(services, ports) {
    // Agent actions proposed by other areas; the area that proposes is named by the key's first word.
    ports.provide(
      'agentActions',
      services.actions.port((key) => key.slice(0, key.indexOf('.'))),
    );
  },
  subgraph: (services) => ({ resolvers: [ActivityResolver], createResolver: (cls) => new cls(services) }),
  consumers: (services, ctx) =>
    services.sources().map((source) => ({
      // One group per source: replaying a source (a new group from the beginning) rebuilds its items.
      name: `projection.${source.sourceKind}`,
      topics: [`${ctx.topicPrefix}.${source.topic}`],
      fromBeginning: true,
      handler: (m) => services.consume(source, m.value),
    })),
  workers: (services, ctx) => [
    {
      name: 'activity-topics',
      start: () =>
        ctx.bus
          .ensureTopics(Object.values(ACTIVITY_TOPICS).map((t) => `${ctx.topicPrefix}.${t}`))
          .catch((e) => ctx.log.warn({ err: e }, 'activity topics not ensured')),
      stop: () => undefined,
    },
    // Decided actions whose work was never confirmed (crash between decision and performer) run again.
    periodicWorker('activity-continuations', REDRIVE_AFTER_MS, ctx.log, () => services.actions.redriveContinuations()),
  ],
  routes: activityRoutes,
  cli: [agentsAct],
  feeds: activityFeeds,
});
