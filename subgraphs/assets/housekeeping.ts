import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AreaContext, BackgroundWorker, ConsumerDefinition } from '../../core/area';
import { periodicWorker } from '../../core/periodic-worker';
import type { OperationExecutor } from '../../core/operations/engine';
import type { AnyRoute } from '../../core/rest-route';
import type { ObjectEvent } from '../../core/events/object-events';
import { Clock } from './lifecycle/clock';
import { lifecycleRuleModel } from './lifecycle/model';
import { AssetLifecycleResolver } from './lifecycle/resolvers';
import { lifecycleRoutes } from './lifecycle/routes';
import { LifecycleRules } from './lifecycle/rules';
import type { AssetsService } from './service';
import { AuditStream, auditModel } from './views/audit';
import { cdnUsageHook } from './views/cdn-usage';
import { AssetViewsResolver } from './views/resolvers';
import { viewRoutes } from './views/routes';
import { UsageCounters, usageModel } from './views/usage';
import { videoCdnPlane } from './video/cdn';
import { VIDEO_OUTPUT_OPERATION, VideoOutputs, videoOutputModel } from './video/outputs';
import { fromObjectEvent, fromRecordChange, RECORD_CHANGES_TOPIC, type RecordChange } from './webhooks/sources';

/**
 * Lifecycle rules, the usage views and legacy video outputs of Assets (issue 16 items 5, 6, 2): index.ts wires them in with
 * one line per hook of the area contract, as external.ts does for the outside-facing parts.
 */
export const housekeepingSettingsSchema = z.object({
  /** How often the lifecycle worker looks at the rules, in ms (1 minute). */
  ASSETS_LIFECYCLE_INTERVAL_MS: z.coerce.number().int().positive().default(60_000),
  /** Test clock: how far ahead of the wall clock rule ages are judged, in ms (0). */
  ASSETS_CLOCK_OFFSET_MS: z.coerce.number().int().default(0),
});

export interface HousekeepingServices {
  lifecycle: LifecycleRules;
  usage: UsageCounters;
  audit: AuditStream;
  video: VideoOutputs;
}

export function housekeepingServices(ctx: AreaContext<unknown>, assets: AssetsService): HousekeepingServices {
  const settings = housekeepingSettingsSchema.parse(ctx.config.env);
  const lifecycle = new LifecycleRules(lifecycleRuleModel(ctx.conn), assets, new Clock(settings.ASSETS_CLOCK_OFFSET_MS), ctx.log);
  const usage = new UsageCounters(usageModel(ctx.conn));
  assets.transforms.onComputed = (d) => usage.add(d.accountId, { transformsComputed: 1, transformBytes: d.size });
  const video = new VideoOutputs(videoOutputModel(ctx.conn), assets, ctx.engine);
  return { lifecycle, usage, audit: new AuditStream(auditModel(ctx.conn), assets), video };
}

export const housekeepingResolvers = [AssetLifecycleResolver, AssetViewsResolver];

export const housekeepingRoutes: AnyRoute[] = [...lifecycleRoutes, ...viewRoutes];

export function housekeepingWorkers(s: HousekeepingServices, ctx: AreaContext<unknown>): BackgroundWorker[] {
  const { ASSETS_LIFECYCLE_INTERVAL_MS } = housekeepingSettingsSchema.parse(ctx.config.env);
  return [
    periodicWorker('assets-lifecycle', ASSETS_LIFECYCLE_INTERVAL_MS, ctx.log, () => s.lifecycle.runDue()),
    { name: 'assets-usage', start: () => s.usage.start(), stop: () => s.usage.stop() },
  ];
}

/** The audit stream records the same events the webhooks fan out, from the same two topics. */
export const housekeepingConsumers = (
  s: HousekeepingServices & { assets: AssetsService },
  ctx: AreaContext<unknown>,
): ConsumerDefinition[] => [
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
];

export const housekeepingExecutors = (s: HousekeepingServices): Record<string, OperationExecutor> => ({
  [VIDEO_OUTPUT_OPERATION]: (ctx) => s.video.run(ctx),
});

/** Counts deliveries of the assets CDN (registered before its routes, so it sees them all); video outputs. */
export async function housekeepingCdn(app: FastifyInstance, assets: AssetsService, s: HousekeepingServices): Promise<void> {
  cdnUsageHook(app, assets, s.usage);
  await videoCdnPlane(app, assets, s.video);
}
