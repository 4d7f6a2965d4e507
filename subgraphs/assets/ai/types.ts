import { GraphQLJSONObject } from 'graphql-scalars';
import { Field, Float, ID, InputType, Int, ObjectType } from 'type-graphql';
import type { ModelEvaluation } from './evaluation';
import type { AiConfigDoc, AiDataDoc, AiJobDoc } from './model';

@ObjectType('AssetAiJob', { description: 'An AI job (spec 2.3: `job_id`, `status`, `status_url`) with its result.' })
export class AiJobType {
  @Field(() => ID) jobId!: string;
  @Field(() => String, { description: '`queued`, `running`, `succeeded` or `failed`' }) status!: string;
  @Field(() => String) statusUrl!: string;
  @Field(() => String) action!: string;
  @Field(() => ID, { nullable: true }) assetId!: string | null;
  @Field(() => String) model!: string;
  @Field(() => Int) attempt!: number;
  @Field(() => Float) priceMicros!: number;
  @Field(() => GraphQLJSONObject, { nullable: true }) result!: Record<string, unknown> | null;
  @Field(() => [ID]) outputAssetIds!: string[];
  @Field(() => GraphQLJSONObject, { nullable: true }) error!: Record<string, unknown> | null;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date, { nullable: true }) finishedAt!: Date | null;
}

export const toAiJob = (j: AiJobDoc, statusUrl: string): AiJobType => ({
  jobId: j._id,
  status: j.status,
  statusUrl,
  action: j.action,
  assetId: j.assetId,
  model: j.model,
  attempt: j.attempt,
  priceMicros: j.priceMicros,
  result: j.result,
  outputAssetIds: j.outputAssetIds ?? [],
  error: j.error,
  createdAt: j.createdAt,
  finishedAt: j.finishedAt,
});

@ObjectType('AssetAiModelEvaluation')
export class AiModelEvaluationType {
  @Field(() => String) model!: string;
  @Field(() => Boolean) passed!: boolean;
  @Field(() => [GraphQLJSONObject]) cases!: Record<string, unknown>[];
}

@ObjectType('AssetAiConfig', { description: 'Spec 2.3 AI configuration, with this month’s spend.' })
export class AiConfigType {
  @Field(() => [String]) enabledActions!: string[];
  @Field(() => Float) monthlySpendCapMicros!: number;
  @Field(() => String) model!: string;
  @Field(() => Int) revision!: number;
  @Field(() => String, { description: 'UTC month the spend counts in, YYYY-MM' }) period!: string;
  @Field(() => Float) spentMicros!: number;
  @Field(() => GraphQLJSONObject) prices!: Record<string, number>;
  @Field(() => AiModelEvaluationType) evaluation!: AiModelEvaluationType;
}

export const toAiConfig = (
  c: AiConfigDoc,
  period: string,
  spentMicros: number,
  prices: Record<string, number>,
  e: ModelEvaluation,
): AiConfigType => ({
  enabledActions: c.enabledActions,
  monthlySpendCapMicros: c.monthlySpendCapMicros,
  model: c.model,
  revision: c.revision,
  period,
  spentMicros,
  prices,
  evaluation: { model: e.model, passed: e.passed, cases: e.cases.map((x) => ({ ...x })) },
});

@InputType('AssetAiConfigInput')
export class AiConfigInputType {
  @Field(() => [String]) enabledActions!: string[];
  @Field(() => Float) monthlySpendCapMicros!: number;
  @Field(() => String, { nullable: true }) model?: string | null;
}

@ObjectType('AssetAiData', { description: 'The latest result of each AI action on one asset.' })
export class AiDataType {
  @Field(() => ID) assetId!: string;
  @Field(() => String) moderationStatus!: string;
  @Field(() => GraphQLJSONObject) results!: Record<string, unknown>;
}

export const toAiData = (assetId: string, moderationStatus: string, d: AiDataDoc | null): AiDataType => ({
  assetId,
  moderationStatus,
  results: Object.fromEntries(
    Object.entries(d?.results ?? {})
      .filter(([k]) => k !== 'text-extraction')
      .map(([k, v]) => [k, { job_id: v.jobId, at: v.at, result: v.result, output_asset_ids: v.outputAssetIds }]),
  ),
});
