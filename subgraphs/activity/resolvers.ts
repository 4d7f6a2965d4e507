import { GraphQLJSON } from 'graphql-scalars';
import { Arg, Authorized, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../core/subgraph-kit';
import type { Scope, ScopeType } from './reads';
import type { ActivityService } from './service';

/**
 * Thin resolvers over the activity service. The feeds answer JSON: their item shapes are the
 * contract-v1 documents of spec 2.6/2.7 (snake_case, nested, with nulls kept), served as-is by
 * the bridge and the graphql-ws feeds (decision 0060).
 */
const scopeOf = (type: string, id: string, projectId?: string | null): Scope => ({
  type: type as ScopeType,
  id,
  projectId: projectId ?? null,
});

@Resolver()
export class ActivityResolver {
  constructor(private readonly activity: ActivityService) {}

  @Authorized('activity:read')
  @Query(() => GraphQLJSON, {
    description: 'Operation activity of a scope (project, application, database, objective): contract v1.',
  })
  operationActivity(
    @Arg('scope') scope: string,
    @Arg('id', () => ID) id: string,
    @Arg('projectId', () => ID, { nullable: true }) projectId: string | null,
    @Arg('limit', () => String, { nullable: true }) limit: string | null,
    @Arg('cursor', () => String, { nullable: true }) cursor: string | null,
    @Ctx() ctx: RequestContext,
  ): Promise<unknown> {
    return this.activity.operationActivity(ctx.principal, scopeOf(scope, id, projectId), {
      limit: limit ?? undefined,
      cursor: cursor ?? undefined,
    });
  }

  @Authorized('activity:read')
  @Query(() => GraphQLJSON, { description: 'One operation-activity item of a scope.' })
  operationActivityItem(
    @Arg('scope') scope: string,
    @Arg('id', () => ID) id: string,
    @Arg('projectId', () => ID, { nullable: true }) projectId: string | null,
    @Arg('activityId') activityId: string,
    @Ctx() ctx: RequestContext,
  ): Promise<unknown> {
    return this.activity.operationActivityItem(ctx.principal, scopeOf(scope, id, projectId), activityId);
  }

  @Authorized('activity:read')
  @Query(() => GraphQLJSON, { description: 'Agent activity of a scope: contract v1.' })
  agentActivity(
    @Arg('scope') scope: string,
    @Arg('id', () => ID) id: string,
    @Arg('projectId', () => ID, { nullable: true }) projectId: string | null,
    @Arg('limit', () => String, { nullable: true }) limit: string | null,
    @Arg('cursor', () => String, { nullable: true }) cursor: string | null,
    @Ctx() ctx: RequestContext,
  ): Promise<unknown> {
    return this.activity.agentActivity(ctx.principal, scopeOf(scope, id, projectId), {
      limit: limit ?? undefined,
      cursor: cursor ?? undefined,
    });
  }

  @Authorized('activity:read')
  @Query(() => GraphQLJSON, { description: 'One agent action of a scope.' })
  agentActivityItem(
    @Arg('scope') scope: string,
    @Arg('id', () => ID) id: string,
    @Arg('projectId', () => ID, { nullable: true }) projectId: string | null,
    @Arg('actionId') actionId: string,
    @Ctx() ctx: RequestContext,
  ): Promise<unknown> {
    return this.activity.agentActivityItem(ctx.principal, scopeOf(scope, id, projectId), actionId);
  }

  @Authorized('activity:write')
  @Mutation(() => GraphQLJSON, { description: 'Records a decision on an approval (or recovers its continuation).' })
  decideApproval(
    @Arg('approvalId') approvalId: string,
    @Arg('decision') decision: string,
    @Arg('actionHash') actionHash: string,
    @Arg('note', () => String, { nullable: true }) note: string | null,
    @Ctx() ctx: RequestContext,
  ): Promise<unknown> {
    return this.activity.decide(ctx.principal, approvalId, { decision, action_hash: actionHash, note });
  }
}
