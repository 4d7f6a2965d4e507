import path from 'node:path';
import type { z } from 'zod';
import { defineArea } from '../../core/area';
import { OutboxRelay } from '../../core/events/outbox';
import { TOPICS } from '../../core/events/topics';
import type { OperationEvent } from '../../core/operations/store';
import { periodicWorker } from '../../core/periodic-worker';
import { agentActionPerformers } from '../../core/agent-actions';
import type { Ports } from '../../core/ports';
import { assetFilesPort } from './asset-files';
import { assetsCdnPlane } from './cdn-plane';
import { FsBlobStore } from '../../core/blobs/fs-blob-store';
import { S3BlobStore, s3Client } from '../../core/blobs/s3-blob-store';
import { assetModels } from './model';
import { AssetsResolver } from './resolvers';
import { assetsRoutes } from './routes';
import { AssetTransformsResolver } from './transform-resolvers';
import { ClamdScanner, EicarScanner } from './scanner';
import { AssetsService } from './service';
import { type AssetsSettings, assetsSettingsSchema } from './settings';
import { assetsUploadPlane, bearerAuthenticate } from './upload-plane';
import { assetsWorker } from './workers';
import { organisationModels } from './collections/model';
import { AssetOrganisationResolver } from './collections/resolvers';
import { collectionRoutes } from './collections/routes';
import { Organisation } from './collections/service';
import { bulkModels } from './bulk/model';
import { AssetBulkResolver } from './bulk/resolvers';
import { bulkRoutes } from './bulk/routes';
import { BULK_OPERATION_TYPE, BulkJobs } from './bulk/service';
import type { ObjectEvent } from '../../core/events/object-events';
import { webhookModels } from './webhooks/model';
import { AssetWebhooksResolver } from './webhooks/resolvers';
import { webhookRoutes } from './webhooks/routes';
import { AssetWebhooks } from './webhooks/service';
import { webhookSettingsSchema } from './webhooks/settings';
import {
  emitAll,
  fromObjectEvent,
  fromRecordChange,
  RECORD_CHANGES_TOPIC,
  type RecordChange,
  withRecordChange,
} from './webhooks/sources';
import * as external from './external';
import * as bucketOps from './bucket-ops';
import * as housekeeping from './housekeeping';
import { assetsMcpPlane } from './mcp/plane';
import { assetsWorkflowHookPlane } from './workflow-hooks/plane';
import { APPROVALS_TOPIC, approvalActivitySource } from './workflows/activity';
import { workflowModels } from './workflows/model';
import { AssetWorkflowsResolver } from './workflows/resolvers';
import { APPROVAL_SWEEP_MS, OP_AUTOMATION_ACTION, OP_WORKFLOW_RUN, WorkflowService } from './workflows/service';
import * as processing from './processing';
// Last: its module reads the kinds' types, so the schema keeps their order (schema/assets.graphql).
import { AssetJobsResolver } from './jobs/resolvers';

export { AssetsService } from './service';

export interface AssetsServices
  extends
    external.ExternalServices,
    housekeeping.HousekeepingServices,
    processing.ProcessingServices,
    bucketOps.BucketOpsServices {
  assets: AssetsService;
  relay: OutboxRelay;
  ports: Ports;
  /** Collections and saved searches (issue 17). */
  organisation: Organisation;
  bulk: BulkJobs;
  webhooks: AssetWebhooks;
  workflows: WorkflowService;
}

/**
 * The Assets storage core (issue 9): buckets, content policy, streamed uploads, records guarded by
 * revisions, versions and branches, delete jobs, signed CDN delivery, object events.
 */
export default defineArea<AssetsServices, AssetsSettings>({
  name: 'assets',
  portOffset: 2,
  // The kernel's ZodType<C> wants input = output; these settings are strings in, numbers out.
  config: assetsSettingsSchema as unknown as z.ZodType<AssetsSettings>,
  services(ctx) {
    const m = assetModels(ctx.conn);
    const root = ctx.settings.ASSETS_BLOB_DIR ?? path.resolve(ctx.config.DATA_DIR, 'assets');
    const blobs =
      ctx.settings.ASSETS_BLOB_STORE === 's3'
        ? new S3BlobStore({
            client: s3Client({
              endpoint: ctx.settings.ASSETS_S3_ENDPOINT,
              region: ctx.settings.ASSETS_S3_REGION,
              accessKeyId: ctx.settings.ASSETS_S3_ACCESS_KEY_ID,
              secretAccessKey: ctx.settings.ASSETS_S3_SECRET_ACCESS_KEY,
            }),
            bucket: ctx.settings.ASSETS_S3_BUCKET,
            prefix: ctx.settings.ASSETS_S3_PREFIX,
          })
        : new FsBlobStore(root);
    const [host, port] = (ctx.settings.ASSETS_CLAMD_ADDRESS ?? '').split(':');
    const scanner = host && port ? new ClamdScanner(host, Number(port)) : new EicarScanner();
    // Writes in this process nudge the relay at once; the idle scan (a collection scan per model on
    // the wire server) only picks up what another process wrote: once a second, as the engine's.
    const relay = new OutboxRelay({ models: [m.Asset, m.Job], bus: ctx.bus, intervalMs: 1_000 });
    const assets = new AssetsService(
      m,
      blobs,
      scanner,
      ctx.settings,
      ctx.config,
      () => ctx.topic('objects'),
      () => relay.nudge(),
    );
    const workflows = new WorkflowService({
      models: workflowModels(ctx.conn),
      assets,
      engine: ctx.engine,
      bus: ctx.bus,
      ports: ctx.ports,
      log: ctx.log,
      notifyTopic: () => ctx.topic('workflows'),
      baseUrl: () => ctx.config.baseUrl ?? '',
      approvalsTopic: () => `${ctx.topicPrefix}.${APPROVALS_TOPIC}`,
    });
    const organisation = new Organisation(organisationModels(ctx.conn), assets);
    const webhooks = new AssetWebhooks(webhookModels(ctx.conn), assets, webhookSettingsSchema.parse(ctx.config.env), ctx.log);
    const bulk = new BulkJobs(bulkModels(ctx.conn), assets, ctx.engine);
    bulk.emitter = webhooks;
    // Derived credentials end with their key (docs/decisions/0099); identity answers through the kernel port.
    assets.keyLive = (accountId, keyId) => ctx.ports.get('keyStatus').isLive(accountId, keyId);
    assets.prepareGuardedUpdate = (ref, update) => withRecordChange(ctx.topic(RECORD_CHANGES_TOPIC), ref, update);
    return {
      assets,
      relay,
      ports: ctx.ports,
      workflows,
      organisation,
      bulk,
      webhooks,
      ...external.externalServices(ctx, assets),
      ...housekeeping.housekeepingServices(ctx, assets),
      ...processing.processingServices(ctx, assets),
      ...bucketOps.bucketOpsServices(ctx, assets),
    };
  },
  subgraph: (s) => ({
    resolvers: [
      AssetsResolver,
      AssetJobsResolver,
      AssetTransformsResolver,
      AssetWorkflowsResolver,
      AssetOrganisationResolver,
      AssetBulkResolver,
      AssetWebhooksResolver,
      ...external.externalResolvers,
      ...housekeeping.housekeepingResolvers,
      ...processing.processingResolvers,
      ...bucketOps.bucketOpsResolvers,
    ],
    // The second argument (all the area's services) lets a resolver reach the service it wraps.
    createResolver: (cls) => (cls === AssetWorkflowsResolver ? new cls(s?.workflows) : new cls(s?.assets, s)),
  }),
  provides(s, ports) {
    ports.provide('assetFiles', assetFilesPort(s.assets));
    ports.provide('objectBuckets', bucketOps.objectBucketsPort(s));
    // Approvals are agent actions (core/agent-actions.ts): decided on either route, performed here.
    agentActionPerformers(ports).register('assets.', { perform: (d) => s.workflows.applyDecision(d) });
  },
  routes: [
    ...assetsRoutes,
    ...collectionRoutes,
    ...bulkRoutes,
    ...webhookRoutes,
    ...external.externalRoutes,
    ...housekeeping.housekeepingRoutes,
    ...processing.processingRoutes,
    ...bucketOps.bucketOpsRoutes,
  ],
  executors: (s) => ({
    [OP_WORKFLOW_RUN]: (ctx) => s.workflows.executeRun(ctx),
    [OP_AUTOMATION_ACTION]: (ctx) => s.workflows.executeAction(ctx),
    [BULK_OPERATION_TYPE]: (ctx) => s.bulk.run(ctx),
    ...external.externalExecutors(s),
    ...housekeeping.housekeepingExecutors(s),
    ...processing.processingExecutors(s),
    ...bucketOps.bucketOpsExecutors(s),
  }),
  standIns: [...external.externalStandIns],
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
    ...housekeeping.housekeepingConsumers(s, ctx),
    {
      // A run whose segment operation the engine gave up on is failed, not left `running`.
      name: 'workflow-run-operations',
      topics: [`${ctx.topicPrefix}.${TOPICS.operations}`],
      fromBeginning: true,
      handler: async (m) => s.workflows.onOperationEvent(m.value as OperationEvent),
    },
  ],
  workers: (s, ctx) => [
    { name: 'assets-outbox', start: () => s.relay.start(), stop: () => s.relay.stop() },
    assetsWorker(s.assets, ctx.log),
    { name: 'assets-approvals-outbox', start: () => s.workflows.relay.start(), stop: () => s.workflows.relay.stop() },
    // Expires forgotten approvals (and fails the runs waiting on them).
    periodicWorker('assets-approval-expiry', APPROVAL_SWEEP_MS, ctx.log, () => s.workflows.sweepExpired()),
    { name: 'assets-webhook-deliveries', start: () => s.webhooks.start(), stop: () => s.webhooks.stop() },
    ...housekeeping.housekeepingWorkers(s, ctx),
    ...processing.processingWorkers(s),
    bucketOps.bucketOpsWorker(s),
  ],
  activitySources: [approvalActivitySource],
  http: {
    bridge: async (app, s) => {
      await bucketOps.bucketOpsBridge(app, s.assets, s, bearerAuthenticate(s.ports));
      await app.register(async (scope) => assetsUploadPlane(scope, s.assets, bearerAuthenticate(s.ports)));
      await app.register(async (scope) => assetsMcpPlane(scope, s.workflows, bearerAuthenticate(s.ports)));
      await app.register(async (scope) => assetsWorkflowHookPlane(scope, s.workflows));
      await external.externalBridge(app, s.assets, s, bearerAuthenticate(s.ports));
    },
    cdn: async (app, s) => {
      await bucketOps.bucketOpsCdn(app, s.assets, s);
      await housekeeping.housekeepingCdn(app, s.assets, s);
      await assetsCdnPlane(app, s.assets);
      await external.externalCdn(app, s.assets, s);
    },
  },
});
