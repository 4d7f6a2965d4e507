import { Arg, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../../core/subgraph-kit';
import type { AiConfigs } from './config';
import { evaluateModel } from './evaluation';
import type { AiJobs } from './jobs';
import { type ImageAction, IMAGE_ACTIONS, periodOf, PRICE_MICROS } from './pricing';
import type { AiSpend } from './spend';
import { AiConfigInputType, AiConfigType, AiDataType, AiJobType, toAiConfig, toAiData, toAiJob } from './types';
import { badRequest } from '../../../core/errors';
import type { AssetsService } from '../storage';

export interface AiServices {
  aiJobs: AiJobs;
  aiConfigs: AiConfigs;
  aiSpend: AiSpend;
}

/** Thin resolvers of AI configuration, actions and jobs. */
@Resolver()
export class AssetAiResolver {
  private readonly s: AiServices;
  constructor(
    private readonly assets: AssetsService,
    services?: AiServices,
  ) {
    this.s = services as AiServices;
  }

  private async config(accountId: string, doc: Awaited<ReturnType<AiConfigs['of']>>): Promise<AiConfigType> {
    const period = periodOf(new Date());
    return toAiConfig(doc, period, await this.s.aiSpend.spent(accountId, period), PRICE_MICROS, await evaluateModel(doc.model));
  }

  @Query(() => AiConfigType)
  async assetAiConfig(@Ctx() ctx: RequestContext): Promise<AiConfigType> {
    const doc = await this.s.aiConfigs.get(ctx.principal);
    return this.config(doc._id, doc);
  }

  @Mutation(() => AiConfigType)
  async putAssetAiConfig(
    @Arg('input', () => AiConfigInputType) input: AiConfigInputType,
    @Ctx() ctx: RequestContext,
    @Arg('ifMatch', () => String, { nullable: true }) ifMatch?: string,
  ): Promise<AiConfigType> {
    const doc = await this.s.aiConfigs.put(ctx.principal, ifMatch, input);
    return this.config(doc._id, doc);
  }

  @Query(() => AiDataType)
  async assetAiData(@Arg('assetId', () => ID) assetId: string, @Ctx() ctx: RequestContext): Promise<AiDataType> {
    const { asset, data } = await this.s.aiJobs.data(ctx.principal, assetId);
    return toAiData(asset._id, asset.moderationStatus, data);
  }

  @Mutation(() => AiJobType)
  async requestAssetAiAction(
    @Arg('assetId', () => ID) assetId: string,
    @Arg('action', () => String) action: string,
    @Ctx() ctx: RequestContext,
    @Arg('width', () => Int, { nullable: true }) width?: number,
    @Arg('height', () => Int, { nullable: true }) height?: number,
  ): Promise<AiJobType> {
    if (!(IMAGE_ACTIONS as readonly string[]).includes(action)) throw badRequest('validation_failed', `unknown action ${action}`);
    if (action === 'smart-crop' && (!width || !height))
      throw badRequest('validation_failed', 'smart-crop needs width and height');
    const job = await this.s.aiJobs.submit(ctx.principal, {
      action: action as ImageAction,
      assetId,
      input: action === 'smart-crop' ? { width, height } : {},
    });
    return toAiJob(job, this.s.aiJobs.statusUrl(job._id));
  }

  @Query(() => AiJobType)
  async assetAiJob(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<AiJobType> {
    return toAiJob(await this.s.aiJobs.get(ctx.principal, id), this.s.aiJobs.statusUrl(id));
  }
}
