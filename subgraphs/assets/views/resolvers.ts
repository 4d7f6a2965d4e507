import { GraphQLJSONObject } from 'graphql-scalars';
import { Arg, Ctx, Field, Float, ID, Int, ObjectType, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../../core/subgraph-kit';
import { analytics } from './analytics';
import type { AuditEventDoc, AuditStream } from './audit';
import { summarise } from './summary';
import type { AssetsService } from '../storage';
import type { UsageCounters, UsageCounts } from '../usage';

@ObjectType('AssetDeliveryUsage')
class DeliveryUsageType {
  @Field(() => Float, { description: 'CDN responses with bytes or a 304.' }) requests!: number;
  @Field(() => Float) bytes!: number;
}

@ObjectType('AssetTransformUsage')
class TransformUsageType {
  @Field(() => Float, { description: 'Derivatives computed (cache misses).' }) computed!: number;
  @Field(() => Float, { description: 'Derivative responses on the CDN (`/t/`, `/tr/`).' }) deliveries!: number;
  @Field(() => Float, { description: 'Bytes of the derivatives computed.' }) bytes!: number;
}

@ObjectType('AssetAiUsage')
class AiUsageType {
  @Field(() => Float) actions!: number;
  @Field(() => Float) spendMicros!: number;
}

@ObjectType('AssetUsage')
class UsageType {
  @Field(() => DeliveryUsageType) delivery!: DeliveryUsageType;
  @Field(() => TransformUsageType) transforms!: TransformUsageType;
  @Field(() => AiUsageType) ai!: AiUsageType;
}

@ObjectType('AssetUsageDay')
class UsageDayType extends UsageType {
  @Field(() => String, { description: 'UTC day, YYYY-MM-DD.' }) date!: string;
}

@ObjectType('AssetAnalytics')
class AnalyticsType {
  @Field(() => String) from!: string;
  @Field(() => String) to!: string;
  @Field(() => UsageType) totals!: UsageType;
  @Field(() => [UsageDayType]) days!: UsageDayType[];
}

@ObjectType('AssetSummaryGroup')
class SummaryGroupType {
  @Field(() => String) key!: string;
  @Field(() => Int) assets!: number;
  @Field(() => Float) bytes!: number;
}

@ObjectType('AssetDuplicateGroup')
class DuplicateGroupType {
  @Field(() => String) checksum!: string;
  @Field(() => Int) assets!: number;
  @Field(() => Float) bytes!: number;
  @Field(() => Float) wastedBytes!: number;
  @Field(() => [ID], { description: 'Oldest first, at most 20.' }) assetIds!: string[];
}

@ObjectType('AssetSummaryTotals')
class SummaryTotalsType {
  @Field(() => Int) assets!: number;
  @Field(() => Float, { description: 'Current-version bytes.' }) bytes!: number;
  @Field(() => Float, { description: 'Bytes held by all versions (the quota figure).' }) storedBytes!: number;
}

@ObjectType('AssetSummary')
class SummaryType {
  @Field(() => SummaryTotalsType) totals!: SummaryTotalsType;
  @Field(() => [SummaryGroupType]) byType!: SummaryGroupType[];
  @Field(() => [SummaryGroupType]) byStatus!: SummaryGroupType[];
  @Field(() => [SummaryGroupType]) byVisibility!: SummaryGroupType[];
  @Field(() => [SummaryGroupType]) byBucket!: SummaryGroupType[];
  @Field(() => [DuplicateGroupType]) duplicateGroups!: DuplicateGroupType[];
}

@ObjectType('AssetAuditEvent')
class AuditEventType {
  @Field(() => ID) id!: string;
  @Field(() => String) type!: string;
  @Field(() => ID, { nullable: true }) assetId!: string | null;
  @Field(() => Date) occurredAt!: Date;
  @Field(() => Date) recordedAt!: Date;
  @Field(() => GraphQLJSONObject) data!: Record<string, unknown>;
}

@ObjectType('AssetAuditEventPage')
class AuditPageType {
  @Field(() => [AuditEventType]) events!: AuditEventType[];
  @Field(() => String, { description: 'Empty when there is no further page.' }) nextCursor!: string;
}

const toUsage = (c: UsageCounts): UsageType => ({
  delivery: { requests: c.deliveryRequests, bytes: c.deliveryBytes },
  transforms: { computed: c.transformsComputed, deliveries: c.transformDeliveries, bytes: c.transformBytes },
  ai: { actions: c.aiActions, spendMicros: c.aiSpendMicros },
});

const toEvent = (e: AuditEventDoc): AuditEventType => ({
  id: e._id,
  type: e.type,
  assetId: e.assetId,
  occurredAt: e.occurredAt,
  recordedAt: e.recordedAt,
  data: e.data ?? {},
});

/** Thin resolvers of the views: analytics, summary, audit events. */
@Resolver()
export class AssetViewsResolver {
  private readonly usage: UsageCounters;
  private readonly audit: AuditStream;
  constructor(
    private readonly assets: AssetsService,
    services?: { usage: UsageCounters; audit: AuditStream },
  ) {
    this.usage = services?.usage as UsageCounters;
    this.audit = services?.audit as AuditStream;
  }

  @Query(() => AnalyticsType)
  async assetAnalytics(
    @Ctx() ctx: RequestContext,
    @Arg('from', () => String, { nullable: true }) from?: string,
    @Arg('to', () => String, { nullable: true }) to?: string,
  ): Promise<AnalyticsType> {
    const a = await analytics(this.assets, this.usage, ctx.principal, { from, to });
    return {
      from: a.from,
      to: a.to,
      totals: toUsage(a.totals),
      days: a.days.map((d) => ({ date: d.day, ...toUsage(d.counts) })),
    };
  }

  @Query(() => SummaryType)
  async assetSummary(@Ctx() ctx: RequestContext): Promise<SummaryType> {
    const s = await summarise(this.assets, ctx.principal);
    return { totals: { assets: s.assets, bytes: s.bytes, storedBytes: s.storedBytes }, ...s };
  }

  @Query(() => AuditPageType)
  async assetEvents(
    @Ctx() ctx: RequestContext,
    @Arg('assetId', () => ID, { nullable: true }) assetId?: string,
    @Arg('direction', () => String, { nullable: true }) direction?: string,
    @Arg('limit', () => Int, { nullable: true }) limit?: number,
    @Arg('cursor', () => String, { nullable: true }) cursor?: string,
  ): Promise<AuditPageType> {
    const page = await this.audit.list(ctx.principal, {
      assetId,
      direction: direction === 'asc' ? 'asc' : 'desc',
      limit,
      cursor,
    });
    return { events: page.events.map(toEvent), nextCursor: page.nextCursor };
  }
}
