import type { AgentActionOperationLink, DecidedAgentAction } from '../../../core/agent-actions';
import type { EventBus } from '../../../core/events/event-bus';
import type { OutboxRelay } from '../../../core/events/outbox';
import type { Logger } from '../../../core/logger';
import type { OperationContext, OperationEngine } from '../../../core/operations/engine';
import type { OperationEvent } from '../../../core/operations/store';
import type { Ports } from '../../../core/ports';
import type { Principal } from '../../../core/principal';
import type { GovernedTool } from './mcp-tools';
import { WorkflowApprovals } from './approvals';
import { GovernedToolCalls } from './automation';
import { WorkflowDefinitions } from './definitions';
import type { ApprovalDoc, AuditDoc, RunDoc, WorkflowDoc, WorkflowModels, WorkflowVersionDoc } from './model';
import type { Page } from './paging';
import { RunExecutor } from './run-executor';
import { WorkflowRuns } from './runs';
import type { AssetsService } from '../storage';
import { SCOPES } from '../records';

export interface WorkflowDeps {
  models: WorkflowModels;
  assets: AssetsService;
  engine: OperationEngine;
  bus: EventBus;
  ports: Ports;
  log: Logger;
  /** Physical name of `<prefix>.assets.workflows` (notify steps publish there). */
  notifyTopic(): string;
  /** The REST base (`{base_url}`) at call time: hook URLs are absolute. */
  baseUrl(): string;
  /** Physical name of `<prefix>.assets.approvals` (the approvals' activity source). */
  approvalsTopic(): string;
}

/**
 * The front of workflows, their runs and approvals, and the audit of governed tool calls: every
 * rule lives in one concept's file beside it (as the publisher's front service does, decision
 * 0006), this class only builds them and hands each call on.
 *
 * - `definitions.ts`: workflows, drafts, versions, activation;
 * - `runs.ts`: starting, reading, cancelling and retrying runs, and what a decision does to a run;
 * - `run-executor.ts` (with `steps.ts`): a run's segments as kernel operations;
 * - `approvals.ts`: opening, deciding, withdrawing and expiring approvals, and their outbox;
 * - `automation.ts`: governed tool calls and their audit.
 */
export class WorkflowService {
  private readonly definitions: WorkflowDefinitions;
  private readonly runsOf: WorkflowRuns;
  private readonly executor: RunExecutor;
  private readonly approvalsOf: WorkflowApprovals;
  private readonly automation: GovernedToolCalls;

  constructor(readonly d: WorkflowDeps) {
    const reader = (p: Principal | null | undefined) => d.assets.reader(p);
    const writer = (p: Principal | null | undefined) => d.assets.writer(p, SCOPES.write);
    this.definitions = new WorkflowDefinitions({ models: d.models, ports: d.ports, baseUrl: d.baseUrl, reader, writer });
    this.approvalsOf = new WorkflowApprovals({
      models: d.models,
      bus: d.bus,
      ports: d.ports,
      log: d.log,
      approvalsTopic: d.approvalsTopic,
      reader,
      writer,
      continueAfter: (a) => (a.kind === 'automation_tool' ? this.automation.continueAfter(a) : this.runsOf.continueAfter(a)),
      expired: (a, now) => this.runsOf.failExpired(a, now),
    });
    const openApproval = (doc: ApprovalDoc, summary: string) => this.approvalsOf.open(doc, summary);
    this.runsOf = new WorkflowRuns({
      models: d.models,
      assets: d.assets,
      engine: d.engine,
      definitions: this.definitions,
      reader,
      writer,
      withdrawApproval: (id) => this.approvalsOf.withdraw(id),
    });
    this.executor = new RunExecutor({
      models: d.models,
      assets: d.assets,
      bus: d.bus,
      notifyTopic: d.notifyTopic,
      definitions: this.definitions,
      openApproval,
    });
    this.automation = new GovernedToolCalls({
      models: d.models,
      assets: d.assets,
      engine: d.engine,
      reader,
      insertApproval: openApproval,
    });
  }

  /** Publishes the approvals' outbox (started where the area's workers run). */
  get relay(): OutboxRelay {
    return this.approvalsOf.relay;
  }

  // ---- workflows and versions (definitions.ts) -----------------------------------------------

  list(p: Principal | null, limit?: number, cursor?: string): Promise<Page<WorkflowDoc>> {
    return this.definitions.list(p, limit, cursor);
  }
  get(p: Principal | null, id: string): Promise<WorkflowDoc> {
    return this.definitions.get(p, id);
  }
  create(p: Principal | null, input: { name: string; projectId?: string | null; draft?: unknown }): Promise<WorkflowDoc> {
    return this.definitions.create(p, input);
  }
  saveDraft(p: Principal | null, id: string, ifMatch: string | null | undefined, draft: unknown): Promise<WorkflowDoc> {
    return this.definitions.saveDraft(p, id, ifMatch, draft);
  }
  validate(p: Principal | null, id: string): Promise<{ valid: boolean; errors: { path: string; message: string }[] }> {
    return this.definitions.validate(p, id);
  }
  publish(p: Principal | null, id: string): Promise<WorkflowVersionDoc> {
    return this.definitions.publish(p, id);
  }
  versions(p: Principal | null, id: string): Promise<WorkflowVersionDoc[]> {
    return this.definitions.versions(p, id);
  }
  activate(p: Principal | null, id: string, version?: number | null): Promise<{ workflow: WorkflowDoc; secret: string | null }> {
    return this.definitions.activate(p, id, version);
  }
  hookUrl(wf: WorkflowDoc): string | null {
    return this.definitions.hookUrl(wf);
  }

  // ---- runs (runs.ts, run-executor.ts) -------------------------------------------------------

  /** Starts a run of the active version (or `version`); 409 when the workflow has nothing to run. */
  run(
    p: Principal | null,
    id: string,
    input: { assetId?: string | null; version?: number | null; payload?: Record<string, unknown> },
  ): Promise<RunDoc> {
    return this.runsOf.run(p, id, input);
  }
  /** A run started by a trigger (a hook delivery fixes `fixedRunId`: 409 on a second start). */
  startRun(
    wf: WorkflowDoc,
    actor: Principal,
    input: { assetId?: string | null; version?: number | null; payload?: Record<string, unknown> },
    trigger: RunDoc['trigger'],
    fixedRunId?: string,
  ): Promise<RunDoc> {
    return this.runsOf.startRun(wf, actor, input, trigger, fixedRunId);
  }
  runs(p: Principal | null, workflowId: string, limit?: number, cursor?: string): Promise<Page<RunDoc>> {
    return this.runsOf.runs(p, workflowId, limit, cursor);
  }
  getRun(p: Principal | null, runId: string): Promise<RunDoc> {
    return this.runsOf.getRun(p, runId);
  }
  cancelRun(p: Principal | null, runId: string): Promise<RunDoc> {
    return this.runsOf.cancelRun(p, runId);
  }
  retryRun(p: Principal | null, runId: string): Promise<RunDoc> {
    return this.runsOf.retryRun(p, runId);
  }
  executeRun(ctx: OperationContext): Promise<unknown> {
    return this.executor.executeRun(ctx);
  }
  onOperationEvent(ev: OperationEvent): Promise<void> {
    return this.executor.onOperationEvent(ev);
  }

  // ---- approvals (approvals.ts) --------------------------------------------------------------

  approvals(p: Principal | null, status: string | undefined, limit?: number, cursor?: string): Promise<Page<ApprovalDoc>> {
    return this.approvalsOf.list(p, status, limit, cursor);
  }
  getApproval(p: Principal | null, id: string): Promise<ApprovalDoc> {
    return this.approvalsOf.get(p, id);
  }
  decide(
    p: Principal | null,
    id: string,
    decision: 'approved' | 'rejected',
    body: { actionHash?: string | null; note?: string | null },
  ): Promise<ApprovalDoc> {
    return this.approvalsOf.decide(p, id, decision, body);
  }
  /** The performer of `assets.*` agent actions (registered in the module's `provides`). */
  applyDecision(d: DecidedAgentAction): Promise<{ operations: AgentActionOperationLink[] }> {
    return this.approvalsOf.applyDecision(d);
  }
  /** Expires pending approvals past their time, at most `batch` a call (the sweep worker's). */
  sweepExpired(batch = 100): Promise<number> {
    return this.approvalsOf.sweepExpired(batch);
  }

  // ---- automation: governed tool calls (automation.ts) -------------------------------------

  /** Performs an approved automation tool call (once: the operation's step records its result). */
  executeAction(ctx: OperationContext): Promise<unknown> {
    return this.automation.executeAction(ctx);
  }
  callTool(
    p: Principal,
    t: GovernedTool,
    args: Record<string, unknown>,
  ): Promise<{ outcome: 'allowed' | 'approval_required'; result?: unknown; approval?: ApprovalDoc }> {
    return this.automation.callTool(p, t, args);
  }
  recentAudits(p: Principal | null): Promise<AuditDoc[]> {
    return this.automation.recentAudits(p);
  }
}
