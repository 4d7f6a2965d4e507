import { Arg, Authorized, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../../core/subgraph-kit';
import type { SendService } from './sender';
import type { WebhookService } from './webhooks';
import {
  MailEventPageType,
  MailSendResultType,
  MailTimelineType,
  MailWebhookCreatedType,
  MailWebhookDeliveryPageType,
  MailWebhookDeliveryType,
  MailWebhookListType,
  MailWebhookSecretType,
  MailWebhookType,
} from './types';

const opt = { nullable: true } as const;

@Resolver()
export class MailSendingResolver {
  constructor(
    _audit: unknown,
    private readonly mail: { sender: SendService; webhooks: WebhookService },
  ) {}

  @Authorized('mail:write')
  @Mutation(() => MailSendResultType, { description: 'Queues a message (a test key records it without sending).' })
  sendMail(
    @Arg('from', () => String) from: string,
    @Arg('to', () => [String]) to: string[],
    @Arg('subject', () => String) subject: string,
    @Arg('cc', () => [String], opt) cc: string[] | null,
    @Arg('bcc', () => [String], opt) bcc: string[] | null,
    @Arg('html', () => String, opt) html: string | null,
    @Arg('text', () => String, opt) text: string | null,
    @Arg('tags', () => [String], opt) tags: string[] | null,
    @Arg('attachments', () => [ID], { ...opt, description: 'Assets ids sent as attachments.' }) attachments: string[] | null,
    @Ctx() ctx: RequestContext,
  ): Promise<MailSendResultType> {
    return this.mail.sender.send(ctx.principal, {
      from,
      to,
      subject,
      cc: cc ?? [],
      bcc: bcc ?? [],
      html,
      text,
      tags: tags ?? [],
      attachments: attachments ?? [],
    });
  }

  @Authorized('mail:read')
  @Query(() => MailTimelineType)
  async mailMessageTimeline(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<MailTimelineType> {
    return { items: await this.mail.sender.timeline(ctx.principal, id) };
  }

  @Authorized('mail:read')
  @Query(() => MailEventPageType)
  mailEvents(
    @Ctx() ctx: RequestContext,
    @Arg('type', () => String, opt) type: string | null,
    @Arg('resourceType', () => String, opt) resourceType: string | null,
    @Arg('resourceId', () => String, opt) resourceId: string | null,
    @Arg('messageId', () => String, opt) messageId: string | null,
    @Arg('from', () => String, opt) from: string | null,
    @Arg('to', () => String, opt) to: string | null,
    @Arg('limit', () => Int, opt) limit: number | null,
    @Arg('cursor', () => String, opt) cursor: string | null,
  ): Promise<MailEventPageType> {
    return this.mail.webhooks
      .events(ctx.principal, { type, resourceType, resourceId, messageId, from, to, limit, cursor })
      .then((p) => ({
        items: p.items.map((e) => ({
          id: e._id,
          type: e.type,
          resourceType: e.resourceType,
          resourceId: e.resourceId,
          messageId: e.messageId,
          createdAt: e.createdAt,
          data: e.data,
        })),
        nextCursor: p.nextCursor,
      }));
  }

  @Authorized('mail:write')
  @Mutation(() => MailWebhookCreatedType)
  createMailWebhook(
    @Arg('url', () => String) url: string,
    @Arg('eventTypes', () => [String]) eventTypes: string[],
    @Arg('description', () => String, opt) description: string | null,
    @Ctx() ctx: RequestContext,
  ): Promise<MailWebhookCreatedType> {
    return this.mail.webhooks.create(ctx.principal, { url, eventTypes, description });
  }

  @Authorized('mail:read')
  @Query(() => MailWebhookListType)
  async mailWebhooks(@Ctx() ctx: RequestContext): Promise<MailWebhookListType> {
    return { items: await this.mail.webhooks.list(ctx.principal), nextCursor: null };
  }

  @Authorized('mail:write')
  @Mutation(() => MailWebhookType)
  updateMailWebhook(
    @Arg('webhookId', () => ID) webhookId: string,
    @Arg('url', () => String, opt) url: string | null,
    @Arg('eventTypes', () => [String], opt) eventTypes: string[] | null,
    @Arg('enabled', () => Boolean, opt) enabled: boolean | null,
    @Ctx() ctx: RequestContext,
  ): Promise<MailWebhookType> {
    return this.mail.webhooks.update(ctx.principal, webhookId, { url, eventTypes, enabled });
  }

  @Authorized('mail:write')
  @Mutation(() => MailWebhookSecretType)
  rotateMailWebhookSecret(
    @Arg('webhookId', () => ID) webhookId: string,
    @Ctx() ctx: RequestContext,
  ): Promise<MailWebhookSecretType> {
    return this.mail.webhooks.rotate(ctx.principal, webhookId);
  }

  @Authorized('mail:write')
  @Mutation(() => Boolean)
  deleteMailWebhook(@Arg('webhookId', () => ID) webhookId: string, @Ctx() ctx: RequestContext): Promise<boolean> {
    return this.mail.webhooks.remove(ctx.principal, webhookId);
  }

  @Authorized('mail:read')
  @Query(() => MailWebhookDeliveryPageType)
  mailWebhookDeliveries(
    @Arg('webhookId', () => ID) webhookId: string,
    @Ctx() ctx: RequestContext,
    @Arg('status', () => String, opt) status: string | null,
    @Arg('limit', () => Int, opt) limit: number | null,
    @Arg('cursor', () => String, opt) cursor: string | null,
  ): Promise<MailWebhookDeliveryPageType> {
    return this.mail.webhooks.deliveries(ctx.principal, webhookId, { status, limit, cursor });
  }

  @Authorized('mail:read')
  @Query(() => MailWebhookDeliveryType)
  mailWebhookDelivery(
    @Arg('deliveryId', () => ID) deliveryId: string,
    @Ctx() ctx: RequestContext,
  ): Promise<MailWebhookDeliveryType> {
    return this.mail.webhooks.delivery(ctx.principal, deliveryId);
  }

  @Authorized('mail:write')
  @Mutation(() => MailWebhookDeliveryType)
  retryMailWebhookDelivery(
    @Arg('deliveryId', () => ID) deliveryId: string,
    @Ctx() ctx: RequestContext,
  ): Promise<MailWebhookDeliveryType> {
    return this.mail.webhooks.retry(ctx.principal, deliveryId);
  }
}
