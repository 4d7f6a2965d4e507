import { PlatformError } from '../../../core/errors';
import type { OperationContext } from '../../../core/operations/engine';
import type { OperationEvent } from '../../../core/operations/store';
import { DEFAULT_APPROVAL_TTL_S, type StepDef, STEP_CONFIGS } from './catalog';
import { type WorkflowDefinitions, workflowNotFound } from './definitions';
import { approvalHash, runOperationId, stepApprovalId } from './ids';
import type { ApprovalDoc, RunDoc, WorkflowDoc, WorkflowModels } from './model';
import { OP_WORKFLOW_RUN } from './runs';
import { type StepDeps, performStep, withStep } from './steps';

export interface RunExecutorDeps extends StepDeps {
  models: WorkflowModels;
  definitions: Pick<WorkflowDefinitions, 'version'>;
  /** Records a pending approval with its agent action (approvals.ts: the approvals' one way in). */
  openApproval(doc: ApprovalDoc, summary: string): Promise<void>;
}

/**
 * The executor of a run's segments (operations of type OP_WORKFLOW_RUN, runs.ts enqueues them), and
 * the run's end when the engine gives up on a segment. A segment runs from the run's cursor to the
 * end or to a `wait_for_approval` step, where it opens the approval and stops.
 */
export class RunExecutor {
  constructor(private readonly d: RunExecutorDeps) {}

  private get m() {
    return this.d.models;
  }

  /**
   * One segment of a run: from its cursor up to the end, or up to a `wait_for_approval` step (the
   * segment then ends; the decision starts the next one). Every write is conditional on the run
   * still being in this segment and at this cursor, so a cancel wins and a re-run changes nothing.
   */
  async executeRun(ctx: OperationContext): Promise<unknown> {
    const { runId, segment } = ctx.op.input as { runId: string; segment: number };
    let found = await this.m.Run.findById(runId).lean<RunDoc>().exec();
    if (!found || found.segment !== segment || (found.status !== 'queued' && found.status !== 'running')) {
      return { skipped: true, status: found?.status ?? null };
    }
    if (found.status === 'queued') {
      found = await this.m.Run.findOneAndUpdate(
        { _id: runId, segment, status: 'queued' },
        { $set: { status: 'running', updatedAt: new Date() } },
        { new: true },
      )
        .lean<RunDoc>()
        .exec();
      if (!found) return { skipped: true };
    }
    let run: RunDoc = found;
    const wf = await this.m.Workflow.findById(run.workflowId).lean<WorkflowDoc>().exec();
    if (!wf) throw workflowNotFound();
    const { definition } = await this.d.definitions.version(wf, run.version);
    while (run.cursor < definition.steps.length) {
      const i: number = run.cursor;
      const step = definition.steps[i];
      if (step.type === 'wait_for_approval') return this.pauseForApproval(run, step);
      let result: unknown;
      try {
        const current = run;
        result = await ctx.step(step.id, () => performStep(this.d, current, step, ctx.op._id));
      } catch (e) {
        const final = !(e instanceof PlatformError) || !e.retriable || ctx.op.attempt >= ctx.op.maxAttempts;
        if (final) await this.failRun(run, i, e);
        throw e;
      }
      const steps = withStep(run.steps, i, { status: 'succeeded', result, errorCode: null, finishedAt: new Date() });
      const next: RunDoc | null = await this.m.Run.findOneAndUpdate(
        { _id: runId, segment, status: 'running', cursor: i },
        { $set: { cursor: i + 1, steps, updatedAt: new Date() } },
        { new: true },
      )
        .lean<RunDoc>()
        .exec();
      if (!next) return { stopped: true };
      run = next;
    }
    const now = new Date();
    await this.m.Run.updateOne(
      { _id: runId, segment, status: 'running', cursor: run.cursor },
      { $set: { status: 'succeeded', finishedAt: now, updatedAt: now } },
    ).exec();
    return { status: 'succeeded' };
  }

  private async failRun(run: RunDoc, i: number, e: unknown): Promise<void> {
    const code = e instanceof PlatformError ? e.code : 'internal_error';
    const message = e instanceof PlatformError ? e.message : 'the step failed';
    const now = new Date();
    await this.m.Run.updateOne(
      { _id: run._id, segment: run.segment, status: 'running', cursor: i },
      {
        $set: {
          status: 'failed',
          errorCode: code,
          errorMessage: message,
          steps: withStep(run.steps, i, { status: 'failed', errorCode: code, finishedAt: now }),
          finishedAt: now,
          updatedAt: now,
        },
      },
    ).exec();
  }

  /**
   * A segment's operation failed without the executor failing the run: the engine gave up on it
   * (every worker that claimed it died, `operation_abandoned`) or it never ran. Without this the
   * run would show `running` for ever. Read from the kernel's operation events; conditional on the
   * run still being in that segment at the cursor read, so a run the executor already ended, a
   * cancelled run and a later segment are left alone, and a redelivered event changes nothing.
   */
  async onOperationEvent(ev: OperationEvent): Promise<void> {
    if (ev.operationType !== OP_WORKFLOW_RUN || ev.status !== 'failed') return;
    const run = await this.m.Run.findById(ev.resourceId).lean<RunDoc>().exec();
    if (!run || (run.status !== 'queued' && run.status !== 'running')) return;
    if (runOperationId(run._id, run.segment) !== ev.id) return; // an earlier segment's operation
    const code = ev.errorCode ?? 'internal_error';
    const now = new Date();
    await this.m.Run.updateOne(
      { _id: run._id, segment: run.segment, status: run.status, cursor: run.cursor },
      {
        $set: {
          status: 'failed',
          errorCode: code,
          errorMessage: 'the platform stopped running this workflow run; retry it to resume where it stopped',
          steps:
            run.cursor < run.steps.length
              ? withStep(run.steps, run.cursor, { status: 'failed', errorCode: code, finishedAt: now })
              : run.steps,
          finishedAt: now,
          updatedAt: now,
        },
      },
    ).exec();
  }

  private async pauseForApproval(run: RunDoc, step: StepDef): Promise<unknown> {
    const config = STEP_CONFIGS.wait_for_approval.parse(step.config);
    const approvalId = stepApprovalId(run._id, run.segment, step.id);
    const now = new Date();
    await this.d.openApproval(
      {
        _id: approvalId,
        accountId: run.accountId,
        kind: 'workflow_step',
        actionKey: 'assets.workflow.continue',
        actionHash: approvalHash([approvalId, 'assets.workflow.continue', run._id, run.segment, step.id]),
        title: config.title ?? `Continue workflow run at step ${step.id}`,
        status: 'pending',
        projectId: run.projectId,
        runId: run._id,
        stepId: step.id,
        tool: null,
        requestedBy: { type: 'workflow_run', id: run._id },
        actor: run.actor,
        expiresAt: new Date(now.getTime() + (config.expires_in ?? DEFAULT_APPROVAL_TTL_S) * 1000),
        decidedAt: null,
        decidedBy: null,
        note: null,
        operationId: null,
        outbox: [],
        createdAt: now,
        updatedAt: now,
      },
      `Workflow run ${run._id} waits at step ${step.id} for a person's approval before it continues`,
    );
    await this.m.Run.updateOne(
      { _id: run._id, segment: run.segment, status: 'running', cursor: run.cursor },
      {
        $set: {
          status: 'waiting_approval',
          approvalId,
          steps: withStep(run.steps, run.cursor, { status: 'waiting', result: { approval_id: approvalId } }),
          updatedAt: now,
        },
      },
    ).exec();
    return { waiting_for_approval: approvalId };
  }
}
