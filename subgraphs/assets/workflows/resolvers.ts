import { GraphQLJSON, GraphQLJSONObject } from 'graphql-scalars';
import { Arg, Ctx, Field, ID, Int, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import { badRequest } from '../../../core/errors';
import type { Principal } from '../../../core/principal';
import type { RequestContext } from '../../../core/subgraph-kit';
import { GOVERNED_TOOLS, toolView } from './mcp-tools';
import { catalogView } from './catalog';
import { mayDecide, type Requester } from '../../../core/decision-rights';
import type { ApprovalDoc, AuditDoc, RunDoc, WorkflowDoc, WorkflowVersionDoc } from './model';
import type { WorkflowService } from './service';

/** Thin resolvers over WorkflowService (decision 0027); REST names come from the documents' aliases. */

@ObjectType('AssetWorkflow', { description: 'A workflow: an editable draft and its published versions.' })
export class WorkflowType {
  @Field(() => ID) id!: string;
  @Field(() => String) name!: string;
  @Field(() => ID, { nullable: true }) projectId!: string | null;
  @Field(() => String, { description: '`draft`, `active` or `inactive`.' }) status!: string;
  @Field(() => GraphQLJSONObject, { description: 'The draft: `{trigger: {type}, steps: [{id, type, config}]}`.' })
  draft!: Record<string, unknown>;
  @Field(() => Int) revision!: number;
  @Field(() => Int) latestVersion!: number;
  @Field(() => Int, { nullable: true }) activeVersion!: number | null;
  @Field(() => String, { nullable: true, description: 'The signed public receiver of a `hook` workflow.' })
  hookUrl!: string | null;
  @Field(() => String, { nullable: true, description: 'The hook signing secret: only in the activation that created it.' })
  hookSecret!: string | null;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
}

@ObjectType('AssetWorkflowPage')
export class WorkflowPageType {
  @Field(() => [WorkflowType]) items!: WorkflowType[];
  @Field(() => String, { nullable: true }) nextCursor!: string | null;
}

@ObjectType('AssetWorkflowValidation')
export class ValidationType {
  @Field(() => Boolean) valid!: boolean;
  @Field(() => GraphQLJSON, { description: '`[{path, message}]`' }) errors!: unknown;
}

@ObjectType('AssetWorkflowVersion', { description: 'A published version: immutable.' })
export class VersionType {
  @Field(() => ID) workflowId!: string;
  @Field(() => Int) version!: number;
  @Field(() => GraphQLJSONObject) definition!: Record<string, unknown>;
  @Field(() => Date) createdAt!: Date;
}

@ObjectType('AssetWorkflowRun', { description: 'One run of a published version.' })
export class RunType {
  @Field(() => ID) id!: string;
  @Field(() => ID) workflowId!: string;
  @Field(() => Int) version!: number;
  @Field(() => String, { description: '`queued`, `running`, `waiting_approval`, `succeeded`, `failed` or `cancelled`.' })
  status!: string;
  @Field(() => GraphQLJSONObject) trigger!: Record<string, unknown>;
  @Field(() => GraphQLJSONObject) input!: Record<string, unknown>;
  @Field(() => GraphQLJSON, { description: '`[{id, type, status, result, error_code, finished_at}]`' }) steps!: unknown;
  @Field(() => String, { nullable: true }) currentStep!: string | null;
  @Field(() => ID, { nullable: true }) approvalId!: string | null;
  @Field(() => [String], { description: 'Operation ids of its segments (operation activity).' }) operations!: string[];
  @Field(() => String, { nullable: true }) errorCode!: string | null;
  @Field(() => String, { nullable: true }) errorMessage!: string | null;
  @Field(() => String) statusUrl!: string;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
  @Field(() => Date, { nullable: true }) finishedAt!: Date | null;
}

@ObjectType('AssetWorkflowRunPage')
export class RunPageType {
  @Field(() => [RunType]) items!: RunType[];
  @Field(() => String, { nullable: true }) nextCursor!: string | null;
}

@ObjectType('AssetApproval', { description: 'An action waiting for (or given) a human decision.' })
export class ApprovalType {
  @Field(() => ID) id!: string;
  @Field(() => String, { description: '`workflow_step` or `automation_tool`.' }) kind!: string;
  @Field(() => String) actionKey!: string;
  @Field(() => String) actionHash!: string;
  @Field(() => String) title!: string;
  @Field(() => String, { description: '`pending`, `approved`, `rejected`, `expired` or `cancelled`.' }) status!: string;
  @Field(() => ID, { nullable: true }) runId!: string | null;
  @Field(() => String, { nullable: true }) stepId!: string | null;
  @Field(() => GraphQLJSONObject, { nullable: true }) tool!: Record<string, unknown> | null;
  @Field(() => GraphQLJSONObject) requestedBy!: Record<string, unknown>;
  @Field(() => Boolean) canDecide!: boolean;
  @Field(() => String) decisionPath!: string;
  @Field(() => Date) expiresAt!: Date;
  @Field(() => Date, { nullable: true }) decidedAt!: Date | null;
  @Field(() => String, { nullable: true }) decidedBy!: string | null;
  @Field(() => String, { nullable: true }) note!: string | null;
  @Field(() => ID, { nullable: true }) operationId!: string | null;
  @Field(() => Date) createdAt!: Date;
}

@ObjectType('AssetApprovalPage')
export class ApprovalPageType {
  @Field(() => [ApprovalType]) items!: ApprovalType[];
  @Field(() => String, { nullable: true }) nextCursor!: string | null;
}

@ObjectType('AssetGovernedTool')
export class ToolType {
  @Field(() => String) name!: string;
  @Field(() => String) title!: string;
  @Field(() => String) description!: string;
  @Field(() => String) scope!: string;
  @Field(() => Boolean) readOnly!: boolean;
  @Field(() => Boolean) requiresApproval!: boolean;
}

@ObjectType('AssetAutomationAudit')
export class AuditType {
  @Field(() => ID) id!: string;
  @Field(() => String, { nullable: true }) keyId!: string | null;
  @Field(() => String) tool!: string;
  @Field(() => String) scope!: string;
  @Field(() => String, { description: '`allowed`, `refused`, `approval_required` or `failed`.' }) outcome!: string;
  @Field(() => String, { nullable: true }) errorCode!: string | null;
  @Field(() => ID, { nullable: true }) approvalId!: string | null;
  @Field(() => Date) createdAt!: Date;
}

@ObjectType('AssetAutomation')
export class AutomationType {
  @Field(() => String) mcpUrl!: string;
  @Field(() => [ToolType]) tools!: ToolType[];
  @Field(() => [AuditType]) audits!: AuditType[];
}

const P = '/api/v1/assets';

export const toWorkflow = (w: WorkflowDoc, svc: WorkflowService, secret: string | null = null): WorkflowType => ({
  id: w._id,
  name: w.name,
  projectId: w.projectId,
  status: w.status,
  draft: w.draft as unknown as Record<string, unknown>,
  revision: w.revision,
  latestVersion: w.latestVersion,
  activeVersion: w.activeVersion,
  hookUrl: svc.hookUrl(w),
  hookSecret: secret,
  createdAt: w.createdAt,
  updatedAt: w.updatedAt,
});

const toVersion = (v: WorkflowVersionDoc): VersionType => ({
  workflowId: v.workflowId,
  version: v.version,
  definition: v.definition as unknown as Record<string, unknown>,
  createdAt: v.createdAt,
});

const iso = (d: Date | null | undefined) => (d ? new Date(d).toISOString() : null);

export const toRun = (r: RunDoc): RunType => ({
  id: r._id,
  workflowId: r.workflowId,
  version: r.version,
  status: r.status,
  trigger: { type: r.trigger.type, key_id: r.trigger.keyId, delivery_id: r.trigger.deliveryId },
  input: r.input,
  steps: r.steps.map((s) => ({
    id: s.id,
    type: s.type,
    status: s.status,
    result: s.result ?? null,
    error_code: s.errorCode,
    finished_at: iso(s.finishedAt),
  })),
  currentStep: r.steps[r.cursor]?.id ?? null,
  approvalId: r.approvalId,
  operations: r.operations,
  errorCode: r.errorCode,
  errorMessage: r.errorMessage,
  // The one job route (its own route `/workflows/runs/{id}` answers the same run).
  statusUrl: `${P}/jobs/${r._id}`,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
  finishedAt: r.finishedAt,
});

/** The route a decision on an approval is sent to (`{decision, action_hash, note?}`). */
export const approvalDecisionPath = (id: string) => `${P}/workflows/approvals/${id}/decision`;

/** `reader`: who reads it; `can_decide` is true only when that key may decide it (decision-rights.ts). */
export const toApproval = (a: ApprovalDoc, reader: Principal | null = null, now = new Date()): ApprovalType => {
  const expired = a.status === 'pending' && new Date(a.expiresAt).getTime() <= now.getTime();
  return {
    id: a._id,
    kind: a.kind,
    actionKey: a.actionKey,
    actionHash: a.actionHash,
    title: a.title,
    status: expired ? 'expired' : a.status,
    runId: a.runId,
    stepId: a.stepId,
    tool: a.tool ? { name: a.tool.name, args: a.tool.args, scope: a.tool.scope } : null,
    requestedBy: a.requestedBy,
    canDecide: a.status === 'pending' && !expired && mayDecide(reader, a.requestedBy as Requester),
    decisionPath: approvalDecisionPath(a._id),
    expiresAt: a.expiresAt,
    decidedAt: a.decidedAt,
    decidedBy: a.decidedBy,
    note: a.note,
    operationId: a.operationId,
    createdAt: a.createdAt,
  };
};

const toAudit = (a: AuditDoc): AuditType => ({
  id: a._id,
  keyId: a.keyId,
  tool: a.tool,
  scope: a.scope,
  outcome: a.outcome,
  errorCode: a.errorCode,
  approvalId: a.approvalId,
  createdAt: a.createdAt,
});

@Resolver()
export class AssetWorkflowsResolver {
  private readonly svc: WorkflowService;
  constructor(_assets: unknown, services?: { workflows: WorkflowService }) {
    this.svc = services?.workflows as WorkflowService;
  }

  @Query(() => GraphQLJSONObject, { description: 'Triggers and step types a workflow may use, with their config.' })
  assetWorkflowCatalog(@Ctx() ctx: RequestContext): Record<string, unknown> {
    this.svc.d.assets.reader(ctx.principal);
    return catalogView();
  }

  @Query(() => WorkflowPageType)
  async assetWorkflows(
    @Ctx() ctx: RequestContext,
    @Arg('limit', () => Int, { nullable: true }) limit?: number,
    @Arg('cursor', () => String, { nullable: true }) cursor?: string,
  ): Promise<WorkflowPageType> {
    const page = await this.svc.list(ctx.principal, limit ?? undefined, cursor ?? undefined);
    return { items: page.items.map((w) => toWorkflow(w, this.svc)), nextCursor: page.nextCursor };
  }

  @Query(() => WorkflowType)
  async assetWorkflow(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<WorkflowType> {
    return toWorkflow(await this.svc.get(ctx.principal, id), this.svc);
  }

  @Mutation(() => WorkflowType)
  async createAssetWorkflow(
    @Arg('name', () => String) name: string,
    @Ctx() ctx: RequestContext,
    @Arg('projectId', () => ID, { nullable: true }) projectId?: string,
    @Arg('draft', () => GraphQLJSONObject, { nullable: true }) draft?: Record<string, unknown>,
  ): Promise<WorkflowType> {
    return toWorkflow(await this.svc.create(ctx.principal, { name, projectId, draft }), this.svc);
  }

  @Mutation(() => WorkflowType)
  async saveAssetWorkflowDraft(
    @Arg('id', () => ID) id: string,
    @Arg('draft', () => GraphQLJSONObject) draft: Record<string, unknown>,
    @Ctx() ctx: RequestContext,
    @Arg('ifMatch', () => String, { nullable: true }) ifMatch?: string,
  ): Promise<WorkflowType> {
    return toWorkflow(await this.svc.saveDraft(ctx.principal, id, ifMatch, draft), this.svc);
  }

  @Mutation(() => ValidationType)
  validateAssetWorkflow(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<ValidationType> {
    return this.svc.validate(ctx.principal, id);
  }

  @Mutation(() => VersionType)
  async publishAssetWorkflow(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<VersionType> {
    return toVersion(await this.svc.publish(ctx.principal, id));
  }

  @Mutation(() => WorkflowType)
  async activateAssetWorkflow(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: RequestContext,
    @Arg('version', () => Int, { nullable: true }) version?: number,
  ): Promise<WorkflowType> {
    const { workflow, secret } = await this.svc.activate(ctx.principal, id, version);
    return toWorkflow(workflow, this.svc, secret);
  }

  @Mutation(() => RunType)
  async runAssetWorkflow(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: RequestContext,
    @Arg('assetId', () => ID, { nullable: true }) assetId?: string,
    @Arg('version', () => Int, { nullable: true }) version?: number,
  ): Promise<RunType> {
    return toRun(await this.svc.run(ctx.principal, id, { assetId, version }));
  }

  @Query(() => [VersionType])
  async assetWorkflowVersions(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<VersionType[]> {
    return (await this.svc.versions(ctx.principal, id)).map(toVersion);
  }

  @Query(() => RunPageType)
  async assetWorkflowRuns(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: RequestContext,
    @Arg('limit', () => Int, { nullable: true }) limit?: number,
    @Arg('cursor', () => String, { nullable: true }) cursor?: string,
  ): Promise<RunPageType> {
    const page = await this.svc.runs(ctx.principal, id, limit ?? undefined, cursor ?? undefined);
    return { items: page.items.map(toRun), nextCursor: page.nextCursor };
  }

  @Query(() => RunType)
  async assetWorkflowRun(@Arg('runId', () => ID) runId: string, @Ctx() ctx: RequestContext): Promise<RunType> {
    return toRun(await this.svc.getRun(ctx.principal, runId));
  }

  @Mutation(() => RunType)
  async cancelAssetWorkflowRun(@Arg('runId', () => ID) runId: string, @Ctx() ctx: RequestContext): Promise<RunType> {
    return toRun(await this.svc.cancelRun(ctx.principal, runId));
  }

  @Mutation(() => RunType)
  async retryAssetWorkflowRun(@Arg('runId', () => ID) runId: string, @Ctx() ctx: RequestContext): Promise<RunType> {
    return toRun(await this.svc.retryRun(ctx.principal, runId));
  }

  @Query(() => ApprovalPageType)
  async assetApprovals(
    @Ctx() ctx: RequestContext,
    @Arg('status', () => String, { nullable: true }) status?: string,
    @Arg('limit', () => Int, { nullable: true }) limit?: number,
    @Arg('cursor', () => String, { nullable: true }) cursor?: string,
  ): Promise<ApprovalPageType> {
    const page = await this.svc.approvals(ctx.principal, status ?? undefined, limit ?? undefined, cursor ?? undefined);
    return { items: page.items.map((a) => toApproval(a, ctx.principal)), nextCursor: page.nextCursor };
  }

  @Mutation(() => ApprovalType)
  async decideAssetApproval(
    @Arg('id', () => ID) id: string,
    @Arg('decision', () => String) decision: string,
    @Ctx() ctx: RequestContext,
    @Arg('actionHash', () => String, { nullable: true }) actionHash?: string,
    @Arg('note', () => String, { nullable: true }) note?: string,
  ): Promise<ApprovalType> {
    // `denied` is the agent-activity word for the same decision (spec 2.7).
    const d = decision === 'denied' ? 'rejected' : decision;
    if (d !== 'approved' && d !== 'rejected') {
      throw badRequest('validation_failed', 'decision must be approved or rejected (or denied)');
    }
    return toApproval(await this.svc.decide(ctx.principal, id, d, { actionHash, note }), ctx.principal);
  }

  @Query(() => AutomationType)
  async assetAutomation(@Ctx() ctx: RequestContext): Promise<AutomationType> {
    const audits = await this.svc.recentAudits(ctx.principal);
    return {
      mcpUrl: `${this.svc.d.baseUrl()}${P}/mcp`,
      tools: GOVERNED_TOOLS.map((t) => {
        const v = toolView(t);
        return { ...v, readOnly: v.read_only, requiresApproval: v.requires_approval };
      }),
      audits: audits.map(toAudit),
    };
  }
}
