import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import type { BulkJobDoc, BulkResult } from './model';
import type { BulkResultsPage } from './service';

@InputType('AssetBulkItemInput')
export class BulkItemInputType {
  @Field(() => ID) assetId!: string;
  @Field(() => Int, { description: 'The revision the caller saw; a stale one fails this item with 412.' }) revision!: number;
  @Field(() => String, { description: '`delete`, `visibility` or `add_tags`' }) action!: string;
  @Field(() => String, { nullable: true, description: '`public` or `private` (action `visibility`).' }) visibility?:
    string | null;
  @Field(() => [String], { nullable: true, description: 'Tags to add (action `add_tags`).' }) tags?: string[] | null;
}

@ObjectType('AssetBulkResult')
export class BulkResultType {
  @Field(() => Int) index!: number;
  @Field(() => ID) assetId!: string;
  @Field(() => String) action!: string;
  @Field(() => String, { description: '`pending`, `succeeded` or `failed`' }) status!: string;
  @Field(() => Int, { nullable: true, description: 'What the change alone would answer: 200, 404, 412.' })
  statusCode!: number | null;
  @Field(() => String, { nullable: true }) errorCode!: string | null;
  @Field(() => String, { nullable: true }) errorMessage!: string | null;
  @Field(() => Int, { nullable: true }) revision!: number | null;
  @Field(() => ID, { nullable: true }) deleteJobId!: string | null;
}

export const toBulkResult = (r: Omit<BulkResult, 'status'> & { status: string }): BulkResultType => ({
  ...r,
  statusCode: r.statusCode || null,
});

@ObjectType('AssetBulkJob', { description: 'A bulk job (spec 2.3): a durable operation over revisioned items.' })
export class BulkJobType {
  @Field(() => ID) jobId!: string;
  @Field(() => String, { description: '`queued`, `running`, `succeeded` (every item has its result) or `failed`' })
  status!: string;
  @Field(() => String) statusUrl!: string;
  @Field(() => String) type!: string;
  @Field(() => Int) total!: number;
  @Field(() => Int) succeeded!: number;
  @Field(() => Int) failed!: number;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date, { nullable: true }) startedAt!: Date | null;
  @Field(() => Date, { nullable: true }) finishedAt!: Date | null;
  @Field(() => [BulkResultType], { nullable: true }) results?: BulkResultType[];
  @Field(() => String, { nullable: true, description: 'Next page of results; empty at the end.' }) nextCursor?: string;
}

export const toBulkJob = (j: BulkJobDoc, baseUrl: string): BulkJobType => ({
  jobId: j._id,
  status: j.status,
  // The one job route; `/bulk/{id}` (with the results) stays.
  statusUrl: `${baseUrl}/api/v1/assets/jobs/${j._id}`,
  type: 'bulk',
  total: j.total,
  succeeded: j.succeeded,
  failed: j.failed,
  createdAt: j.createdAt,
  startedAt: j.startedAt ?? null,
  finishedAt: j.finishedAt ?? null,
});

/** A bulk job with one page of its per-item results (`GET /bulk/{id}` and a bulk job at `/jobs/{id}`). */
export const toBulkJobPage = (j: BulkJobDoc, page: BulkResultsPage, baseUrl: string): BulkJobType => ({
  ...toBulkJob(j, baseUrl),
  results: page.items.map(toBulkResult),
  nextCursor: page.nextCursor,
});
