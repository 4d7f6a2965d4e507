import type { OperationEngine } from '../../core/operations/engine';
import type { PublisherModels, StoredSiteStatus } from './model';
import type { SimulatedInfrastructure } from './simulated-infrastructure';

/** The steps each site operation walks through, in order, and the state it leaves the site in. */
export const SITE_OPERATION_STEPS: Record<string, { steps: string[]; leaves: StoredSiteStatus }> = {
  provision: {
    steps: ['allocate_database', 'create_volume', 'pull_image', 'start_runtime', 'configure_site', 'health_check'],
    leaves: 'running',
  },
  restart: { steps: ['stop_runtime', 'start_runtime', 'health_check'], leaves: 'running' },
  stop: { steps: ['drain_traffic', 'stop_runtime'], leaves: 'stopped' },
  start: { steps: ['start_runtime', 'health_check'], leaves: 'running' },
};

/** Registers the simulated executors of the site lifecycle operations on the engine. */
export function registerSiteExecutors(
  engine: OperationEngine,
  deps: { models: PublisherModels; infra: SimulatedInfrastructure },
): void {
  for (const [operationType, plan] of Object.entries(SITE_OPERATION_STEPS)) {
    engine.register(operationType, async (ctx) => {
      const last = plan.steps[plan.steps.length - 1];
      for (const step of plan.steps) {
        await ctx.step(step, async () => {
          await deps.infra.perform(operationType, step, ctx.signal, ctx.op);
          if (step === last) {
            // Fenced on the lock: only the operation holding the site may set its state.
            await deps.models.Site.updateOne(
              { _id: ctx.op.resourceId, activeOperationId: ctx.op._id },
              { $set: { status: plan.leaves, updatedAt: new Date() } },
            );
          }
          return null;
        });
      }
      return { siteStatus: plan.leaves };
    });
  }
}
