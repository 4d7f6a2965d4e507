import { badRequest } from '../../../core/errors';
import type { EventBus } from '../../../core/events/event-bus';
import { moveAsset, tagAsset, transformAsset } from './actions';
import { type StepDef, type StepType, STEP_CONFIGS } from './catalog';
import type { RunDoc, RunStepDoc } from './model';
import type { AssetsService } from '../storage';

/** What performing a step needs: the assets it changes and where a `notify` step publishes. */
export interface StepDeps {
  assets: AssetsService;
  bus: EventBus;
  /** Physical name of `<prefix>.assets.workflows` (notify steps publish there). */
  notifyTopic(): string;
}

/**
 * Performs one step of a run other than `wait_for_approval` (runs.ts pauses there). Each is safe to
 * perform twice (actions.ts; a notify event's id is fixed by the operation and the step).
 */
export async function performStep(d: StepDeps, run: RunDoc, step: StepDef, operationId: string): Promise<unknown> {
  const assetId = run.input.asset_id as string | null;
  const config = STEP_CONFIGS[step.type as StepType].parse(step.config) as Record<string, unknown>;
  const assets = d.assets;
  switch (step.type) {
    case 'transform':
      return transformAsset(assets, run.actor, assetId!, (config as unknown as { transformation: string }).transformation);
    case 'tag': {
      const c = config as unknown as { add: string[]; remove: string[] };
      return tagAsset(assets, run.actor, assetId!, c.add, c.remove);
    }
    case 'move':
      return moveAsset(assets, run.actor, assetId!, (config as unknown as { bucket: string }).bucket);
    case 'notify': {
      // The event id is fixed by the operation and step: a re-run publishes a duplicate consumers drop.
      const event = {
        event_id: `${operationId}:${step.id}`,
        type: 'workflow.notification',
        account_id: run.accountId,
        workflow_id: run.workflowId,
        run_id: run._id,
        step_id: step.id,
        asset_id: assetId,
        message: (config as unknown as { message: string }).message,
        at: new Date().toISOString(),
      };
      await d.bus.publish([{ topic: d.notifyTopic(), key: run.accountId, value: event }]);
      return { event_id: event.event_id, topic: d.notifyTopic() };
    }
    default:
      throw badRequest('assets.workflow_invalid', `unknown step type ${step.type}`);
  }
}

/** The run's steps with step `i` patched (the rest as they are). */
export function withStep(steps: RunStepDoc[], i: number, patch: Partial<RunStepDoc>): RunStepDoc[] {
  return steps.map((s, j) => (j === i ? { ...s, ...patch } : s));
}
