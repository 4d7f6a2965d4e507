import { Arg, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import type { RequestContext } from '../../../core/subgraph-kit';
import { AiJobType, toAiJob } from '../ai';
import { BulkJobType, toBulkJobPage } from '../bulk';
import { MigrationType } from '../migrations';
import { AssetJobType, type AssetsService, jobStatusUrl, toJob } from '../storage';
import { RunType, toRun } from '../workflows';
import { AssetJobs, type FoundJob, type JobSources } from './service';

const A = '/api/v1/assets';

/** The common job view of any kind; the kind's own record stays in `source` for its field. */
export function toJobView(j: FoundJob, baseUrl: string): AssetJobType {
  const common = { jobId: j.doc._id, kind: j.kind, status: j.doc.status, statusUrl: jobStatusUrl(baseUrl, j.doc._id) };
  const source = j;
  switch (j.kind) {
    case 'delete':
      return { ...toJob(j.doc, baseUrl), source };
    case 'bulk':
      return {
        ...common,
        detailUrl: `${baseUrl}${A}/bulk/${j.doc._id}`,
        type: 'bulk',
        assetId: null,
        error: j.doc.error ?? null,
        createdAt: j.doc.createdAt,
        finishedAt: j.doc.finishedAt ?? null,
        source,
      };
    case 'ai':
      return {
        ...common,
        detailUrl: `${baseUrl}${A}/ai/jobs/${j.doc._id}`,
        type: j.doc.action,
        assetId: j.doc.assetId ?? null,
        error: j.doc.error?.code ?? null,
        createdAt: j.doc.createdAt,
        finishedAt: j.doc.finishedAt ?? null,
        source,
      };
    case 'migration':
      return {
        ...common,
        detailUrl: `${baseUrl}${A}/migrations/${j.doc._id}`,
        type: 'migration',
        assetId: null,
        error: j.doc.error?.code ?? null,
        createdAt: j.doc.createdAt,
        finishedAt: j.doc.finishedAt ?? null,
        source,
      };
    case 'workflow_run': {
      const assetId = j.doc.input?.asset_id;
      return {
        ...common,
        detailUrl: `${baseUrl}${A}/workflows/runs/${j.doc._id}`,
        type: 'workflow_run',
        assetId: typeof assetId === 'string' ? assetId : null,
        error: j.doc.errorCode ?? null,
        createdAt: j.doc.createdAt,
        finishedAt: j.doc.finishedAt ?? null,
        source,
      };
    }
  }
}

const sourceOf = <K extends FoundJob['kind']>(j: AssetJobType, kind: K) =>
  j.source?.kind === kind ? (j.source.doc as Extract<FoundJob, { kind: K }>['doc']) : null;

/** `assetJob` / `cancelAssetJob` over every kind of job (service: ./service.ts). */
@Resolver(() => AssetJobType)
export class AssetJobsResolver {
  constructor(
    private readonly svc: AssetsService,
    private readonly s: JobSources,
  ) {}

  private get jobs() {
    return new AssetJobs(this.s);
  }

  @Query(() => AssetJobType)
  async assetJob(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<AssetJobType> {
    return toJobView(await this.jobs.get(ctx.principal, id), this.svc.cfg.baseUrl);
  }

  @Mutation(() => AssetJobType, {
    description: 'Cancels where the kind supports it (409 `assets.job_not_cancellable` otherwise).',
  })
  async cancelAssetJob(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<AssetJobType> {
    return toJobView(await this.jobs.cancel(ctx.principal, id), this.svc.cfg.baseUrl);
  }

  @FieldResolver(() => BulkJobType, {
    nullable: true,
    description: 'A bulk job (kind `bulk`) with one page of its per-item results, as `assetBulkJob` answers it.',
  })
  async bulk(
    @Root() j: AssetJobType,
    @Arg('limit', () => Int, { nullable: true }) limit?: number,
    @Arg('cursor', () => String, { nullable: true }) cursor?: string,
  ): Promise<BulkJobType | null> {
    const doc = sourceOf(j, 'bulk');
    return doc && toBulkJobPage(doc, await this.s.bulk.results(doc, limit, cursor), this.svc.cfg.baseUrl);
  }

  @FieldResolver(() => AiJobType, { nullable: true, description: 'An AI job with its result (kind `ai`).' })
  ai(@Root() j: AssetJobType): AiJobType | null {
    const doc = sourceOf(j, 'ai');
    return doc && toAiJob(doc, j.statusUrl);
  }

  @FieldResolver(() => MigrationType, { nullable: true, description: 'A migration with its counts (kind `migration`).' })
  async migration(@Root() j: AssetJobType): Promise<MigrationType | null> {
    const doc = sourceOf(j, 'migration');
    return doc && this.s.migrations.view(doc);
  }

  @FieldResolver(() => RunType, { nullable: true, description: 'A workflow run with its steps (kind `workflow_run`).' })
  workflowRun(@Root() j: AssetJobType): RunType | null {
    const doc = sourceOf(j, 'workflow_run');
    return doc && toRun(doc);
  }
}
