import { GraphQLJSONObject } from 'graphql-scalars';
import { Field, Float, ID, Int, ObjectType } from 'type-graphql';
import type { StoredTranscript } from './transcripts';
import type { AiJobDoc } from '../ai';

@ObjectType('AssetTextExtraction', { description: 'An OCR extraction: a job (`job_id`, `status`, `status_url`) and its text.' })
export class TextExtractionType {
  @Field(() => ID) extractionId!: string;
  @Field(() => ID) jobId!: string;
  @Field(() => ID) assetId!: string;
  @Field(() => String, { description: '`queued`, `running`, `succeeded` or `failed`' }) status!: string;
  @Field(() => String) statusUrl!: string;
  @Field(() => Int) attempt!: number;
  @Field(() => String, { nullable: true }) engine!: string | null;
  @Field(() => String, { nullable: true }) language!: string | null;
  @Field(() => String, { nullable: true }) text!: string | null;
  @Field(() => Float, { nullable: true }) confidence!: number | null;
  @Field(() => Int, { nullable: true }) words!: number | null;
  @Field(() => GraphQLJSONObject, { nullable: true }) error!: Record<string, unknown> | null;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date, { nullable: true }) finishedAt!: Date | null;
}

export const toExtraction = (j: AiJobDoc, statusUrl: string): TextExtractionType => {
  const r = (j.result ?? {}) as { engine?: string; language?: string; text?: string; confidence?: number; words?: number };
  return {
    extractionId: j._id,
    jobId: j._id,
    assetId: j.assetId ?? '',
    status: j.status,
    statusUrl,
    attempt: j.attempt,
    engine: r.engine ?? null,
    language: r.language ?? null,
    text: r.text ?? null,
    confidence: r.confidence ?? null,
    words: r.words ?? null,
    error: j.error,
    createdAt: j.createdAt,
    finishedAt: j.finishedAt,
  };
};

@ObjectType('AssetTranscriptSegment')
export class TranscriptSegmentType {
  @Field(() => Float) start!: number;
  @Field(() => Float) end!: number;
  @Field(() => String) text!: string;
}

@ObjectType('AssetTranscript')
export class TranscriptType {
  @Field(() => ID) assetId!: string;
  @Field(() => String) provider!: string;
  @Field(() => String) text!: string;
  @Field(() => String) language!: string;
  @Field(() => [TranscriptSegmentType]) segments!: TranscriptSegmentType[];
  @Field(() => Date) createdAt!: Date;
}

export const toTranscript = (t: StoredTranscript): TranscriptType => ({ ...t });
