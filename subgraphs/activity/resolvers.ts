import { GraphQLJSON } from 'graphql-scalars';
import { Arg, Args, ArgsType, Authorized, Ctx, Field, ID, Mutation, Query, Resolver } from 'type-graphql';
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

/** The scope every activity read names: its kind, its id, and the project of the project-database route. */
@ArgsType()
class ScopeArgs {
  @Field(() => String) scope!: string;
  @Field(() => ID) id!: string;
  @Field(() => ID, { nullable: true }) projectId!: string | null;
}

/** A scope's feed page. */
@ArgsType()
class ScopePageArgs extends ScopeArgs {
  @Field(() => String, { nullable: true }) limit!: string | null;
  @Field(() => String, { nullable: true }) cursor!: string | null;
}

const scopeOfArgs = (a: ScopeArgs) => scopeOf(a.scope, a.id, a.projectId);
const pageOf = (a: ScopePageArgs) => ({ limit: a.limit ?? undefined, cursor: a.cursor ?? undefined });

@Resolver()
export class ActivityResolver {
  constructor(private readonly activity: ActivityService) {}

  @Authorized('activity:read')
  @Query(() => GraphQLJSON, {
    description: 'Operation activity of a scope (project, application, database, objective): contract v1.',
  })
  operationActivity(@Args() a: ScopePageArgs, @Ctx() ctx: RequestContext): Promise<unknown> {
    return this.activity.operationActivity(ctx.principal, scopeOfArgs(a), pageOf(a));
  }

  @Authorized('activity:read')
  @Query(() => GraphQLJSON, { description: 'One operation-activity item of a scope.' })
  operationActivityItem(
    @Args() a: ScopeArgs,
    @Arg('activityId') activityId: string,
    @Ctx() ctx: RequestContext,
  ): Promise<unknown> {
    return this.activity.operationActivityItem(ctx.principal, scopeOfArgs(a), activityId);
  }

  @Authorized('activity:read')
  @Query(() => GraphQLJSON, { description: 'Agent activity of a scope: contract v1.' })
  agentActivity(@Args() a: ScopePageArgs, @Ctx() ctx: RequestContext): Promise<unknown> {
    return this.activity.agentActivity(ctx.principal, scopeOfArgs(a), pageOf(a));
  }

  @Authorized('activity:read')
  @Query(() => GraphQLJSON, { description: 'One agent action of a scope.' })
  agentActivityItem(@Args() a: ScopeArgs, @Arg('actionId') actionId: string, @Ctx() ctx: RequestContext): Promise<unknown> {
    return this.activity.agentActivityItem(ctx.principal, scopeOfArgs(a), actionId);
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
