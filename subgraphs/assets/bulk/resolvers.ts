import { Arg, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../../core/subgraph-kit';
import type { AssetsService } from '../storage';
import type { BulkJobs } from './service';
import { BulkItemInputType, BulkJobType, toBulkJob, toBulkJobPage } from './types';

/** Thin resolvers of bulk jobs. */
@Resolver()
export class AssetBulkResolver {
  private readonly bulk: BulkJobs;
  constructor(
    private readonly assets: AssetsService,
    services?: { bulk: BulkJobs },
  ) {
    this.bulk = services?.bulk as BulkJobs;
  }

  @Mutation(() => BulkJobType)
  async submitAssetBulk(
    @Arg('items', () => [BulkItemInputType]) items: BulkItemInputType[],
    @Ctx() ctx: RequestContext,
  ): Promise<BulkJobType> {
    return toBulkJob(await this.bulk.submit(ctx.principal, items), this.assets.cfg.baseUrl);
  }

  @Query(() => BulkJobType)
  async assetBulkJob(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: RequestContext,
    @Arg('limit', () => Int, { nullable: true }) limit?: number,
    @Arg('cursor', () => String, { nullable: true }) cursor?: string,
  ): Promise<BulkJobType> {
    const job = await this.bulk.get(ctx.principal, id);
    return toBulkJobPage(job, await this.bulk.results(job, limit, cursor), this.assets.cfg.baseUrl);
  }
}
