import { Arg, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../core/subgraph-kit';
import { deliveryView } from './deliveries';
import type { ObjstoreService } from './service';
import {
  CreateSubscriptionInputType,
  DeletedSubscriptionType,
  DeliveryPageType,
  DeliveryType,
  ObjstoreSubscriptionType,
  PullBatchType,
  UpdateSubscriptionInputType,
} from './types';

@Resolver()
export class ObjstoreResolver {
  constructor(private readonly svc: ObjstoreService) {}

  @Query(() => [ObjstoreSubscriptionType])
  objstoreEventSubscriptions(@Arg('bucketId', () => ID) bucketId: string, @Ctx() ctx: RequestContext) {
    return this.svc.subscriptions.list(ctx.principal, bucketId);
  }

  @Query(() => ObjstoreSubscriptionType)
  objstoreEventSubscription(
    @Arg('bucketId', () => ID) bucketId: string,
    @Arg('subscriptionId', () => ID) subscriptionId: string,
    @Ctx() ctx: RequestContext,
  ) {
    return this.svc.subscriptions.get(ctx.principal, bucketId, subscriptionId);
  }

  @Mutation(() => ObjstoreSubscriptionType, { description: 'A push subscription answers its signing secret once.' })
  objstoreCreateEventSubscription(
    @Arg('bucketId', () => ID) bucketId: string,
    @Arg('input', () => CreateSubscriptionInputType) input: CreateSubscriptionInputType,
    @Ctx() ctx: RequestContext,
  ) {
    return this.svc.subscriptions.create(ctx.principal, bucketId, input);
  }

  @Mutation(() => ObjstoreSubscriptionType)
  objstoreUpdateEventSubscription(
    @Arg('bucketId', () => ID) bucketId: string,
    @Arg('subscriptionId', () => ID) subscriptionId: string,
    @Arg('input', () => UpdateSubscriptionInputType) input: UpdateSubscriptionInputType,
    @Ctx() ctx: RequestContext,
  ) {
    return this.svc.subscriptions.update(ctx.principal, bucketId, subscriptionId, input);
  }

  @Mutation(() => DeletedSubscriptionType)
  async objstoreDeleteEventSubscription(
    @Arg('bucketId', () => ID) bucketId: string,
    @Arg('subscriptionId', () => ID) subscriptionId: string,
    @Ctx() ctx: RequestContext,
  ): Promise<DeletedSubscriptionType> {
    const s = await this.svc.subscriptions.remove(ctx.principal, bucketId, subscriptionId);
    return { id: s.id, deleted: true };
  }

  @Mutation(() => PullBatchType, { description: 'Claims up to `limit` deliveries (claims last 15 minutes).' })
  async objstorePullDeliveries(
    @Arg('bucketId', () => ID) bucketId: string,
    @Arg('subscriptionId', () => ID) subscriptionId: string,
    @Arg('limit', () => Int, { nullable: true }) limit: number | null,
    @Ctx() ctx: RequestContext,
  ): Promise<PullBatchType> {
    return { items: await this.svc.pull.pull(ctx.principal, bucketId, subscriptionId, limit) };
  }

  @Mutation(() => DeliveryType)
  async objstoreAckDelivery(
    @Arg('bucketId', () => ID) bucketId: string,
    @Arg('deliveryId', () => ID) deliveryId: string,
    @Arg('claimId', () => String, { nullable: true }) claimId: string | null,
    @Arg('retry', () => Boolean, { nullable: true }) retry: boolean | null,
    @Ctx() ctx: RequestContext,
  ): Promise<DeliveryType> {
    return deliveryView(await this.svc.pull.ack(ctx.principal, bucketId, deliveryId, { claimId, retry }));
  }

  @Mutation(() => DeliveryType)
  objstoreReplayDelivery(
    @Arg('bucketId', () => ID) bucketId: string,
    @Arg('deliveryId', () => ID) deliveryId: string,
    @Ctx() ctx: RequestContext,
  ) {
    return this.svc.deliveries.replay(ctx.principal, bucketId, deliveryId);
  }

  @Query(() => DeliveryPageType, { description: 'Newest first, at most 50 a page.' })
  objstoreDeliveryHistory(
    @Arg('bucketId', () => ID) bucketId: string,
    @Arg('subscriptionId', () => ID) subscriptionId: string,
    @Arg('limit', () => Int, { nullable: true }) limit: number | null,
    @Arg('cursor', () => String, { nullable: true }) cursor: string | null,
    @Ctx() ctx: RequestContext,
  ) {
    return this.svc.deliveries.history(ctx.principal, bucketId, subscriptionId, limit, cursor);
  }
}
