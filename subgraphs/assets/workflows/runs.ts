import { badRequest, conflict, notFound } from '../../../core/errors';
import { newId } from '../../../core/ids';
import { isDuplicateKey } from '../../../core/mongo';
import type { OperationEngine } from '../../../core/operations/engine';
import type { Principal } from '../../../core/principal';
import type { WorkflowDefinitions } from './definitions';
import { runOperationId } from './ids';
import { type ApprovalDoc, type RunDoc, TERMINAL_RUN, type WorkflowDoc, type WorkflowModels } from './model';
import { type Page, pageOf } from './paging';
import { withStep } from './steps';
import type { AssetsService } from '../storage';

/** The operation type a run's segment runs as (registered in the module's `executors`). */
export const OP_WORKFLOW_RUN = 'assets.workflow_run';

const runNotFound = () => notFound('assets.workflow_run_not_found', 'workflow run not found');

export interface RunDeps {
  models: WorkflowModels;
  assets: AssetsService;
  engine: OperationEngine;
  definitions: Pick<WorkflowDefinitions, 'get' | 'version'>;
  reader(p: Principal | null | undefined): Principal;
  writer(p: Principal | null | undefined): Principal;
  /** Withdraws a pending approval (a cancelled run's); a decided one is left as it is. */
  withdrawApproval(approvalId: string): Promise<void>;
}

/**
 * Runs of a workflow: starting one (each segment is a kernel operation, run by run-executor.ts),
 * reading, cancelling and retrying it, and what a decided or expired approval does to the run
 * waiting on it.
 */
export class WorkflowRuns {
  constructor(private readonly d: RunDeps) {}

  private get m() {
    return this.d.models;
  }

  /** Starts a run of the active version (or `version`); 409 when the workflow has nothing to run. */
  async run(
    p: Principal | null,
    id: string,
    input: { assetId?: string | null; version?: number | null; payload?: Record<string, unknown> },
  ): Promise<RunDoc> {
    const actor = this.d.writer(p);
    const wf = await this.d.definitions.get(p, id);
    return this.startRun(wf, actor, input, { type: 'manual', keyId: actor.keyId, deliveryId: null });
  }

  async startRun(
    wf: WorkflowDoc,
    actor: Principal,
    input: { assetId?: string | null; version?: number | null; payload?: Record<string, unknown> },
    trigger: RunDoc['trigger'],
    /** Fixed by the caller when a repeat must be refused (a hook delivery id): 409 on a second start. */
    fixedRunId?: string,
  ): Promise<RunDoc> {
    const versionNo = input.version ?? wf.activeVersion;
    if (!versionNo) throw conflict('assets.workflow_not_active', 'activate the workflow (or name a published version) to run it');
    const v = await this.d.definitions.version(wf, versionNo);
    const needsAsset = v.definition.steps.some((s) => s.type !== 'notify' && s.type !== 'wait_for_approval');
    if (needsAsset && !input.assetId) throw badRequest('validation_failed', 'asset_id is required by this workflow');
    // The asset must be visible to the actor now (404 otherwise), not only when a step reaches it.
    if (input.assetId) await this.d.assets.get(actor, input.assetId);
    const now = new Date();
    const runId = fixedRunId ?? newId();
    const run: RunDoc = {
      _id: runId,
      accountId: wf.accountId,
      workflowId: wf._id,
      projectId: wf.projectId,
      version: v.version,
      trigger,
      input: { asset_id: input.assetId ?? null, ...(input.payload ? { payload: input.payload } : {}) },
      actor,
      status: 'queued',
      cursor: 0,
      steps: v.definition.steps.map((s) => ({
        id: s.id,
        type: s.type,
        status: 'pending',
        result: null,
        errorCode: null,
        finishedAt: null,
      })),
      segment: 1,
      operations: [runOperationId(runId, 1)],
      approvalId: null,
      errorCode: null,
      errorMessage: null,
      createdAt: now,
      updatedAt: now,
      finishedAt: null,
    };
    try {
      await this.m.Run.create(run);
    } catch (e) {
      if (fixedRunId && isDuplicateKey(e)) throw conflict('assets.hook_replayed', 'this delivery id was already received');
      throw e;
    }
    await this.enqueueSegment(run, 1);
    return run;
  }

  private enqueueSegment(run: RunDoc, segment: number) {
    return this.d.engine.enqueue({
      id: runOperationId(run._id, segment),
      accountId: run.accountId,
      // Assets are account-scoped: a workflow that names no project files its runs under the account.
      projectId: run.projectId ?? run.accountId,
      resourceType: 'asset_workflow_run',
      resourceId: run._id,
      operationType: OP_WORKFLOW_RUN,
      input: { runId: run._id, segment },
      initiator: { type: run.trigger.type, key_id: run.trigger.keyId, delivery_id: run.trigger.deliveryId },
    });
  }

  async runs(p: Principal | null, workflowId: string, limit?: number, cursor?: string): Promise<Page<RunDoc>> {
    const wf = await this.d.definitions.get(p, workflowId);
    return pageOf(this.m.Run, { accountId: wf.accountId, workflowId }, `runs:${workflowId}`, limit, cursor);
  }

  async getRun(p: Principal | null, runId: string): Promise<RunDoc> {
    const { accountId } = this.d.reader(p);
    const run = await this.m.Run.findOne({ _id: runId, accountId }).lean<RunDoc>().exec();
    if (!run) throw runNotFound();
    return run;
  }

  /** Stops a run that has not finished; its pending approval is withdrawn. 409 when already terminal. */
  async cancelRun(p: Principal | null, runId: string): Promise<RunDoc> {
    this.d.writer(p);
    const run = await this.getRun(p, runId);
    if (TERMINAL_RUN.has(run.status)) throw conflict('assets.workflow_run_finished', `the run is already ${run.status}`);
    const now = new Date();
    const next = await this.m.Run.findOneAndUpdate(
      { _id: runId, accountId: run.accountId, status: run.status, segment: run.segment },
      { $set: { status: 'cancelled', errorCode: 'cancelled', finishedAt: now, updatedAt: now } },
      { new: true },
    )
      .lean<RunDoc>()
      .exec();
    if (!next) return this.cancelRun(p, runId);
    if (run.approvalId) await this.d.withdrawApproval(run.approvalId);
    return next;
  }

  /** Runs a failed or cancelled run again from the step it stopped at (steps done stay done). */
  async retryRun(p: Principal | null, runId: string): Promise<RunDoc> {
    this.d.writer(p);
    const run = await this.getRun(p, runId);
    if (run.status !== 'failed' && run.status !== 'cancelled') {
      throw conflict('assets.workflow_run_not_retryable', `only a failed or cancelled run can be retried (it is ${run.status})`);
    }
    const segment = run.segment + 1;
    const steps = run.steps.map((s, i) => (i >= run.cursor ? { ...s, status: 'pending' as const, errorCode: null } : s));
    const next = await this.m.Run.findOneAndUpdate(
      { _id: runId, accountId: run.accountId, status: run.status, segment: run.segment },
      {
        $set: {
          status: 'queued',
          segment,
          steps,
          approvalId: null,
          errorCode: null,
          errorMessage: null,
          finishedAt: null,
          updatedAt: new Date(),
        },
        $push: { operations: runOperationId(runId, segment) },
      },
      { new: true },
    )
      .lean<RunDoc>()
      .exec();
    if (!next) throw conflict('assets.workflow_run_changed', 'the run changed meanwhile; read it again');
    await this.enqueueSegment(next, segment);
    return next;
  }

  // ---- what a decision or an expiry does to the run waiting on it (approvals.ts calls these) ----

  /** An expired approval fails the run still waiting on it. */
  async failExpired(a: ApprovalDoc, now: Date): Promise<void> {
    if (!a.runId) return;
    await this.m.Run.updateOne(
      { _id: a.runId, status: 'waiting_approval', approvalId: a._id },
      {
        $set: {
          status: 'failed',
          errorCode: 'assets.approval_expired',
          errorMessage: 'the approval expired',
          finishedAt: now,
          updatedAt: now,
        },
      },
    ).exec();
  }

  /**
   * A decided `workflow_step` approval: a rejection fails the run, an approval queues its next
   * segment (at most once: conditional on the run still waiting on it); the approval then names
   * the operation it started. Safe to call again for the same decision.
   */
  async continueAfter(a: ApprovalDoc): Promise<ApprovalDoc> {
    const now = new Date();
    const run = a.runId ? await this.m.Run.findById(a.runId).lean<RunDoc>().exec() : null;
    if (!run) return a;
    if (run.status === 'waiting_approval' && run.approvalId === a._id) {
      if (a.status === 'rejected') {
        await this.m.Run.updateOne(
          { _id: run._id, status: 'waiting_approval', approvalId: a._id },
          {
            $set: {
              status: 'failed',
              errorCode: 'assets.approval_rejected',
              errorMessage: 'a person rejected the run',
              steps: withStep(run.steps, run.cursor, {
                status: 'failed',
                errorCode: 'assets.approval_rejected',
                finishedAt: now,
              }),
              approvalId: null,
              finishedAt: now,
              updatedAt: now,
            },
          },
        ).exec();
        return a;
      }
      const segment = run.segment + 1;
      const steps = withStep(run.steps, run.cursor, {
        status: 'succeeded',
        result: { approval_id: a._id, decided_by: a.decidedBy },
        finishedAt: now,
      });
      const moved = await this.m.Run.updateOne(
        { _id: run._id, status: 'waiting_approval', approvalId: a._id, segment: run.segment },
        {
          $set: { status: 'queued', cursor: run.cursor + 1, segment, steps, approvalId: null, updatedAt: now },
          $push: { operations: runOperationId(run._id, segment) },
        },
      ).exec();
      if (moved.modifiedCount === 1) await this.enqueueSegment(run, segment);
    } else if (a.status === 'approved' && run.status === 'queued') {
      // A repeated approval whose first attempt moved the run but did not confirm the enqueue.
      await this.enqueueSegment(run, run.segment);
    }
    const opId = a.status === 'approved' ? runOperationId(run._id, run.segment + (run.approvalId === a._id ? 1 : 0)) : null;
    if (opId && !a.operationId) {
      return (
        (await this.m.Approval.findOneAndUpdate({ _id: a._id, operationId: null }, { $set: { operationId: opId } }, { new: true })
          .lean<ApprovalDoc>()
          .exec()) ?? a
      );
    }
    return a;
  }
}
