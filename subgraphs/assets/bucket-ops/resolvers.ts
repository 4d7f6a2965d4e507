import { Arg, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../../core/subgraph-kit';
import type { BucketOpsServices } from './services';
import type { InventoryFormat } from './model';
import {
  AccessLogPageType,
  AnalyticsType,
  InventoryExportType,
  QueryInputType,
  QueryResultType,
  RelocationType,
  StorageInputType,
  WebsiteType,
  toAccessLog,
  toAnalytics,
  toInventoryExport,
  toRelocation,
  toWebsite,
} from './types';
import { type AssetsService, BucketInputType, BucketType, toBucket } from '../storage';

/** Thin resolvers of the object-store bucket operations (decision 0029). */
@Resolver()
export class BucketOpsResolver {
  private readonly ops: BucketOpsServices['bucketOps'];
  constructor(
    private readonly assets: AssetsService,
    services?: BucketOpsServices,
  ) {
    this.ops = services?.bucketOps as BucketOpsServices['bucketOps'];
  }

  private get baseUrl() {
    return this.assets.cfg.baseUrl ?? '';
  }

  @Query(() => [BucketType])
  async objstoreBuckets(@Ctx() ctx: RequestContext): Promise<BucketType[]> {
    return (await this.ops.buckets.list(ctx.principal)).map(toBucket);
  }

  @Mutation(() => BucketType)
  async createObjstoreBucket(
    @Arg('input', () => BucketInputType) input: BucketInputType,
    @Ctx() ctx: RequestContext,
  ): Promise<BucketType> {
    return toBucket(await this.ops.buckets.create(ctx.principal, { ...input }));
  }

  @Mutation(() => BucketType)
  async updateObjstoreBucketStorage(
    @Arg('bucketId', () => ID) bucketId: string,
    @Arg('input', () => StorageInputType) input: StorageInputType,
    @Ctx() ctx: RequestContext,
    @Arg('ifMatch', () => String, { nullable: true }) ifMatch?: string,
  ): Promise<BucketType> {
    return toBucket(await this.ops.buckets.updateStorage(ctx.principal, bucketId, ifMatch, { ...input }));
  }

  @Mutation(() => RelocationType)
  async relocateObjstoreBucket(
    @Arg('bucketId', () => ID) bucketId: string,
    @Arg('region', () => String) region: string,
    @Ctx() ctx: RequestContext,
  ): Promise<RelocationType> {
    return toRelocation(await this.ops.relocations.start(ctx.principal, bucketId, region), this.baseUrl);
  }

  @Query(() => RelocationType)
  async objstoreBucketRelocation(
    @Arg('bucketId', () => ID) bucketId: string,
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: RequestContext,
  ): Promise<RelocationType> {
    return toRelocation(await this.ops.relocations.get(ctx.principal, bucketId, id), this.baseUrl);
  }

  @Query(() => WebsiteType)
  async objstoreBucketWebsite(@Arg('bucketId', () => ID) bucketId: string, @Ctx() ctx: RequestContext): Promise<WebsiteType> {
    return toWebsite(await this.ops.buckets.website(ctx.principal, bucketId), this.assets.cfg.cdnUrl ?? '');
  }

  @Mutation(() => WebsiteType)
  async putObjstoreBucketWebsite(
    @Arg('bucketId', () => ID) bucketId: string,
    @Arg('enabled', () => Boolean) enabled: boolean,
    @Ctx() ctx: RequestContext,
    @Arg('indexObject', () => String, { nullable: true }) indexObject?: string,
    @Arg('errorObject', () => String, { nullable: true }) errorObject?: string,
  ): Promise<WebsiteType> {
    const m = await this.ops.buckets.putWebsite(ctx.principal, bucketId, { enabled, indexObject, errorObject });
    return toWebsite(m, this.assets.cfg.cdnUrl ?? '');
  }

  @Query(() => AnalyticsType)
  async objstoreBucketAnalytics(
    @Arg('bucketId', () => ID) bucketId: string,
    @Ctx() ctx: RequestContext,
    @Arg('start', () => String, { nullable: true }) start?: string,
  ): Promise<AnalyticsType> {
    return toAnalytics(bucketId, await this.ops.analytics.analytics(ctx.principal, bucketId, start));
  }

  @Query(() => AccessLogPageType)
  async objstoreBucketAccessLogs(
    @Arg('bucketId', () => ID) bucketId: string,
    @Ctx() ctx: RequestContext,
    @Arg('limit', () => Int, { nullable: true }) limit?: number,
    @Arg('cursor', () => String, { nullable: true }) cursor?: string,
  ): Promise<AccessLogPageType> {
    const page = await this.ops.analytics.accessLogs(ctx.principal, bucketId, limit ?? 50, cursor);
    return { items: page.items.map(toAccessLog), nextCursor: page.nextCursor };
  }

  @Mutation(() => InventoryExportType)
  async createObjstoreInventoryExport(
    @Arg('bucketId', () => ID) bucketId: string,
    @Arg('format', () => String) format: string,
    @Ctx() ctx: RequestContext,
    @Arg('prefix', () => String, { nullable: true }) prefix?: string,
  ): Promise<InventoryExportType> {
    const d = await this.ops.inventory.start(ctx.principal, bucketId, format as InventoryFormat, prefix);
    return toInventoryExport(d, this.baseUrl);
  }

  @Query(() => InventoryExportType)
  async objstoreInventoryExport(
    @Arg('bucketId', () => ID) bucketId: string,
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: RequestContext,
  ): Promise<InventoryExportType> {
    return toInventoryExport(await this.ops.inventory.get(ctx.principal, bucketId, id), this.baseUrl);
  }

  @Query(() => QueryResultType)
  async objstoreBucketQuery(
    @Arg('bucketId', () => ID) bucketId: string,
    @Arg('input', () => QueryInputType) input: QueryInputType,
    @Ctx() ctx: RequestContext,
  ): Promise<QueryResultType> {
    const r = await this.ops.query.run(ctx.principal, bucketId, { ...input });
    return { rows: r.rows, rowCount: r.rows.length, truncated: r.truncated };
  }
}
