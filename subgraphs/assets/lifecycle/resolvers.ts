import { Arg, Ctx, Field, ID, InputType, Int, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../../core/subgraph-kit';
import type { LifecycleRuleDoc } from './model';
import type { LifecycleRules } from './rules';
import type { AssetsService } from '../storage';

@ObjectType('AssetLifecycleRule', { description: 'A lifecycle rule (spec 2.3), run by the assets worker.' })
export class LifecycleRuleType {
  @Field(() => ID) id!: string;
  @Field(() => String) name!: string;
  @Field(() => String, { nullable: true, description: 'Literal key prefix; null = every key.' }) prefix!: string | null;
  @Field(() => String, { description: '`delete` or `expire_versions`.' }) action!: string;
  @Field(() => Int) ageDays!: number;
  @Field(() => Boolean) enabled!: boolean;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date, { nullable: true }) lastRunAt!: Date | null;
  @Field(() => Int, { description: 'Assets this rule has sent to deletion.' }) deletedAssets!: number;
  @Field(() => Int, { description: 'Versions this rule has expired.' }) expiredVersions!: number;
}

@ObjectType('AssetLifecycleRuleDeletion')
export class LifecycleRuleDeletionType {
  @Field(() => ID) id!: string;
  @Field(() => Boolean) deleted!: boolean;
}

@InputType('AssetLifecycleRuleInput')
export class LifecycleRuleInput {
  @Field(() => String) name!: string;
  @Field(() => String, { nullable: true }) prefix?: string | null;
  @Field(() => String) action!: string;
  @Field(() => Int) ageDays!: number;
  @Field(() => Boolean, { nullable: true }) enabled?: boolean | null;
}

export const toRule = (r: LifecycleRuleDoc): LifecycleRuleType => ({
  id: r._id,
  name: r.name,
  prefix: r.prefix,
  action: r.action,
  ageDays: r.ageDays,
  enabled: r.enabled,
  createdAt: r.createdAt,
  lastRunAt: r.lastRunAt,
  deletedAssets: r.deletedAssets ?? 0,
  expiredVersions: r.expiredVersions ?? 0,
});

/** Thin resolvers over `LifecycleRules`. */
@Resolver()
export class AssetLifecycleResolver {
  private readonly rules: LifecycleRules;
  constructor(_assets: AssetsService, services?: { lifecycle: LifecycleRules }) {
    this.rules = services?.lifecycle as LifecycleRules;
  }

  @Query(() => [LifecycleRuleType])
  async assetLifecycleRules(@Ctx() ctx: RequestContext): Promise<LifecycleRuleType[]> {
    return (await this.rules.list(ctx.principal)).map(toRule);
  }

  @Mutation(() => LifecycleRuleType)
  async createAssetLifecycleRule(
    @Arg('input', () => LifecycleRuleInput) input: LifecycleRuleInput,
    @Ctx() ctx: RequestContext,
  ): Promise<LifecycleRuleType> {
    const action = input.action === 'expire_versions' ? 'expire_versions' : 'delete';
    return toRule(
      await this.rules.create(ctx.principal, {
        name: input.name,
        prefix: input.prefix ?? null,
        action,
        ageDays: input.ageDays,
        enabled: input.enabled ?? true,
      }),
    );
  }

  @Mutation(() => LifecycleRuleDeletionType)
  async deleteAssetLifecycleRule(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: RequestContext,
  ): Promise<LifecycleRuleDeletionType> {
    return { id: (await this.rules.remove(ctx.principal, id))._id, deleted: true };
  }
}
