import { Arg, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../../core/subgraph-kit';
import type { AssetWebhooks } from './service';
import {
  DeliveryPageType,
  DeliveryType,
  WebhookCreatedType,
  WebhookDeletionType,
  WebhookInput,
  WebhookListType,
  toDelivery,
  toWebhook,
} from './types';
import type { AssetsService } from '../storage';

/** Thin resolvers of asset webhooks and their deliveries. */
@Resolver()
export class AssetWebhooksResolver {
  private readonly hooks: AssetWebhooks;
  constructor(_assets: AssetsService, services?: { webhooks: AssetWebhooks }) {
    this.hooks = services?.webhooks as AssetWebhooks;
  }

  @Mutation(() => WebhookCreatedType)
  async createAssetWebhook(
    @Arg('input', () => WebhookInput) input: WebhookInput,
    @Ctx() ctx: RequestContext,
  ): Promise<WebhookCreatedType> {
    const w = await this.hooks.create(ctx.principal, { ...input });
    return { ...toWebhook(w), secret: w.secret };
  }

  @Query(() => WebhookListType)
  async assetWebhooks(@Ctx() ctx: RequestContext): Promise<WebhookListType> {
    return { items: (await this.hooks.list(ctx.principal)).map(toWebhook), nextCursor: '' };
  }

  @Mutation(() => WebhookDeletionType)
  async deleteAssetWebhook(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<WebhookDeletionType> {
    return { id: (await this.hooks.remove(ctx.principal, id))._id, deleted: true };
  }

  @Query(() => DeliveryPageType)
  async assetWebhookDeliveries(
    @Arg('webhookId', () => ID) webhookId: string,
    @Ctx() ctx: RequestContext,
    @Arg('status', () => String, { nullable: true }) status?: string,
    @Arg('limit', () => Int, { nullable: true }) limit?: number,
    @Arg('cursor', () => String, { nullable: true }) cursor?: string,
  ): Promise<DeliveryPageType> {
    const r = await this.hooks.deliveries(ctx.principal, webhookId, { status, limit, cursor });
    return { items: r.items.map(toDelivery), nextCursor: r.nextCursor };
  }

  @Mutation(() => DeliveryType)
  async retryAssetWebhookDelivery(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<DeliveryType> {
    return toDelivery(await this.hooks.retry(ctx.principal, id));
  }
}
