import { Arg, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../../core/subgraph-kit';
import type { Migrations } from './migrations';
import { MigrationInputType, MigrationItemType, MigrationListType, MigrationReportType, MigrationType, toItem } from './types';
import type { AssetsService } from '../storage';

/** Thin resolvers of migrations (the rules and the run are in migrations.ts). */
@Resolver()
export class AssetMigrationsResolver {
  constructor(
    _svc: AssetsService,
    private readonly s: { migrations: Migrations },
  ) {}

  @Query(() => MigrationListType)
  async assetMigrations(
    @Ctx() ctx: RequestContext,
    @Arg('limit', () => Int, { nullable: true }) limit?: number,
    @Arg('cursor', () => String, { nullable: true }) cursor?: string,
  ): Promise<MigrationListType> {
    const r = await this.s.migrations.list(ctx.principal, { limit, cursor });
    return { items: await Promise.all(r.items.map((m) => this.s.migrations.view(m))), nextCursor: r.nextCursor };
  }

  @Query(() => MigrationType)
  async assetMigration(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<MigrationType> {
    return this.s.migrations.view(await this.s.migrations.get(ctx.principal, id));
  }

  @Query(() => MigrationReportType, { description: 'REST serves it as a raw JSON or CSV download.' })
  async assetMigrationReport(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<MigrationReportType> {
    return this.s.migrations.report(ctx.principal, id);
  }

  @Mutation(() => MigrationType)
  async createAssetMigration(
    @Arg('input', () => MigrationInputType) input: MigrationInputType,
    @Ctx() ctx: RequestContext,
  ): Promise<MigrationType> {
    return this.s.migrations.view(await this.s.migrations.create(ctx.principal, input));
  }

  @Mutation(() => MigrationType)
  async cancelAssetMigration(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<MigrationType> {
    return this.s.migrations.view(await this.s.migrations.cancel(ctx.principal, id));
  }

  @Mutation(() => MigrationItemType)
  async retryAssetMigrationItem(
    @Arg('id', () => ID) id: string,
    @Arg('itemId', () => ID) itemId: string,
    @Ctx() ctx: RequestContext,
  ): Promise<MigrationItemType> {
    return toItem(await this.s.migrations.retryItem(ctx.principal, id, itemId));
  }
}
