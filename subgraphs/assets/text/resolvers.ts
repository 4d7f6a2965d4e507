import { Arg, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../../core/subgraph-kit';
import type { TextExtractions } from './extractions';
import type { Transcripts } from './transcripts';
import { TextExtractionType, toExtraction, toTranscript, TranscriptType } from './types';
import type { AiJobs } from '../ai';
import type { AssetsService } from '../storage';

export interface TextServices {
  aiJobs: AiJobs;
  textExtractions: TextExtractions;
  transcripts: Transcripts;
}

/** Thin resolvers of OCR extractions and transcripts. */
@Resolver()
export class AssetTextResolver {
  private readonly s: TextServices;
  constructor(
    private readonly assets: AssetsService,
    services?: TextServices,
  ) {
    this.s = services as TextServices;
  }

  @Mutation(() => TextExtractionType)
  async requestAssetTextExtraction(@Arg('assetId', () => ID) assetId: string, @Ctx() ctx: RequestContext) {
    const job = await this.s.textExtractions.request(ctx.principal, assetId);
    return toExtraction(job, this.s.aiJobs.statusUrl(job._id));
  }

  @Query(() => TextExtractionType)
  async assetTextExtraction(@Arg('assetId', () => ID) assetId: string, @Ctx() ctx: RequestContext) {
    const job = await this.s.textExtractions.latest(ctx.principal, assetId);
    return toExtraction(job, this.s.aiJobs.statusUrl(job._id));
  }

  @Mutation(() => TextExtractionType)
  async retryAssetTextExtraction(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext) {
    const job = await this.s.textExtractions.retry(ctx.principal, id);
    return toExtraction(job, this.s.aiJobs.statusUrl(job._id));
  }

  @Mutation(() => TranscriptType)
  async requestAssetTranscript(@Arg('assetId', () => ID) assetId: string, @Ctx() ctx: RequestContext) {
    return toTranscript(await this.s.transcripts.request(ctx.principal, assetId));
  }

  @Query(() => TranscriptType)
  async assetTranscript(@Arg('assetId', () => ID) assetId: string, @Ctx() ctx: RequestContext) {
    return toTranscript(await this.s.transcripts.get(ctx.principal, assetId));
  }
}
