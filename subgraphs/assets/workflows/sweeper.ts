import type { BackgroundWorker } from '../../../core/area';
import type { Logger } from '../../../core/logger';
import { APPROVAL_SWEEP_MS, type WorkflowService } from './service';

/**
 * Expires pending approvals whose time has passed, so a run waiting on one fails with
 * `assets.approval_expired` even when nobody tries to decide it. Every write is conditional on the
 * approval still being pending, so two sweepers (two worker processes) never conflict.
 */
export function approvalSweeper(workflows: WorkflowService, log: Logger, everyMs = APPROVAL_SWEEP_MS): BackgroundWorker {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  const tick = () => {
    running = workflows
      .sweepExpired()
      .catch((e) => log.warn({ err: e }, 'approval expiry sweep failed'))
      .finally(() => {
        running = undefined;
      });
  };
  return {
    name: 'assets-approval-expiry',
    start() {
      timer = setInterval(tick, everyMs);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      await running;
    },
  };
}
