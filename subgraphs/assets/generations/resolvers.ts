import { Arg, Ctx, Int, Mutation, Resolver } from 'type-graphql';
import type { RequestContext } from '../../../core/subgraph-kit';
import type { Generations } from './service';
import { type AiJobs, AiJobType, toAiJob } from '../ai';
import type { AssetsService } from '../storage';

/** Thin resolver of `POST /generations`. */
@Resolver()
export class AssetGenerationsResolver {
  private readonly s: { aiJobs: AiJobs; generations: Generations };
  constructor(
    private readonly assets: AssetsService,
    services?: { aiJobs: AiJobs; generations: Generations },
  ) {
    this.s = services as { aiJobs: AiJobs; generations: Generations };
  }

  @Mutation(() => AiJobType)
  async createAssetGeneration(
    @Arg('prompt', () => String) prompt: string,
    @Ctx() ctx: RequestContext,
    @Arg('idempotencyKey', () => String, { nullable: true }) idempotencyKey?: string,
    @Arg('width', () => Int, { nullable: true }) width?: number,
    @Arg('height', () => Int, { nullable: true }) height?: number,
    @Arg('count', () => Int, { nullable: true }) count?: number,
    @Arg('bucket', () => String, { nullable: true }) bucket?: string,
  ): Promise<AiJobType> {
    const job = await this.s.generations.create(ctx.principal, idempotencyKey, { prompt, width, height, count, bucket });
    return toAiJob(job, this.s.aiJobs.statusUrl(job._id));
  }
}
