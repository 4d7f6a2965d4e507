import { agentActionPerformers } from '../../../core/agent-actions';
import { defineModule } from '../../../core/area-module';
import { TOPICS } from '../../../core/events/topics';
import type { OperationEvent } from '../../../core/operations/store';
import { periodicWorker } from '../../../core/periodic-worker';
import { assetsMcpPlane } from './mcp-plane';
import { assetsWorkflowHookPlane } from './hook-plane';
import { APPROVALS_TOPIC, approvalActivitySource } from './activity';
import { workflowModels } from './model';
import { AssetWorkflowsResolver } from './resolvers';
import { workflowRoutes } from './routes';
import { APPROVAL_SWEEP_MS } from './approvals';
import { OP_AUTOMATION_ACTION } from './automation';
import { OP_WORKFLOW_RUN } from './runs';
import { WorkflowService } from './service';
import type { CoreModuleServices } from '../storage';
import { bearerAuthenticate } from '../planes';

export interface WorkflowsModuleServices {
  workflows: WorkflowService;
}

/** Workflows, automations and approvals, with their MCP tools and inbound hooks. */
export const workflowsModule = defineModule<WorkflowsModuleServices, CoreModuleServices>({
  name: 'workflows',
  services: (ctx, { assets }) => ({
    workflows: new WorkflowService({
      models: workflowModels(ctx.conn),
      assets,
      engine: ctx.engine,
      bus: ctx.bus,
      ports: ctx.ports,
      log: ctx.log,
      notifyTopic: () => ctx.topic('workflows'),
      baseUrl: () => ctx.config.baseUrl ?? '',
      approvalsTopic: () => `${ctx.topicPrefix}.${APPROVALS_TOPIC}`,
    }),
  }),
  resolvers: [AssetWorkflowsResolver],
  // Its rows, listed right after the core's (the OpenAPI document keeps their order).
  routes: workflowRoutes,
  // Approvals are agent actions (core/agent-actions.ts): decided on either route, performed here.
  provides: (s, ports) => agentActionPerformers(ports).register('assets.', { perform: (d) => s.workflows.applyDecision(d) }),
  executors: (s) => ({
    [OP_WORKFLOW_RUN]: (ctx) => s.workflows.executeRun(ctx),
    [OP_AUTOMATION_ACTION]: (ctx) => s.workflows.executeAction(ctx),
  }),
  consumers: (s, ctx) => [
    {
      // A run whose segment operation the engine gave up on is failed, not left `running`.
      name: 'workflow-run-operations',
      topics: [`${ctx.topicPrefix}.${TOPICS.operations}`],
      fromBeginning: true,
      handler: async (m) => s.workflows.onOperationEvent(m.value as OperationEvent),
    },
  ],
  workers: (s, ctx) => [
    { name: 'assets-approvals-outbox', start: () => s.workflows.relay.start(), stop: () => s.workflows.relay.stop() },
    // Expires forgotten approvals (and fails the runs waiting on them).
    periodicWorker('assets-approval-expiry', APPROVAL_SWEEP_MS, ctx.log, () => s.workflows.sweepExpired()),
  ],
  activitySources: [approvalActivitySource],
  http: {
    bridge: async (app, s) => {
      await app.register(async (scope) => assetsMcpPlane(scope, s.workflows, bearerAuthenticate(s.ports)));
      await app.register(async (scope) => assetsWorkflowHookPlane(scope, s.workflows));
    },
  },
});
