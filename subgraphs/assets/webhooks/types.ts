import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import type { DeliveryDoc } from './model';
import type { WebhookView } from './service';

@ObjectType('AssetWebhook', { description: 'An asset webhook; its signing secret is shown once, on create.' })
export class WebhookType {
  @Field(() => ID) id!: string;
  @Field(() => String) url!: string;
  @Field(() => [String]) eventTypes!: string[];
  @Field(() => String, { nullable: true }) description!: string | null;
  @Field(() => Boolean) enabled!: boolean;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
}

export const toWebhook = (w: WebhookView): WebhookType => ({
  id: w._id,
  url: w.url,
  eventTypes: w.eventTypes,
  description: w.description ?? null,
  enabled: w.enabled,
  createdAt: w.createdAt,
  updatedAt: w.updatedAt,
});

@ObjectType('AssetWebhookCreated')
export class WebhookCreatedType extends WebhookType {
  @Field(() => String, { description: 'Standard Webhooks signing secret (`whsec_…`): shown here only.' }) secret!: string;
}

@ObjectType('AssetWebhookList')
export class WebhookListType {
  @Field(() => [WebhookType]) items!: WebhookType[];
  @Field(() => String) nextCursor!: string;
}

@InputType('AssetWebhookInput')
export class WebhookInput {
  @Field(() => String) url!: string;
  @Field(() => [String]) eventTypes!: string[];
  @Field(() => String, { nullable: true }) description?: string | null;
}

@ObjectType('AssetWebhookAttempt')
export class DeliveryAttemptType {
  @Field(() => Int, { nullable: true }) statusCode!: number | null;
  @Field(() => Int) durationMs!: number;
  @Field(() => Date) at!: Date;
  @Field(() => String, { nullable: true, description: 'The first 2 KiB of the answer.' }) responseExcerpt!: string | null;
  @Field(() => String, { nullable: true }) error!: string | null;
}

@ObjectType('AssetWebhookDelivery')
export class DeliveryType {
  @Field(() => ID) id!: string;
  @Field(() => ID) webhookId!: string;
  @Field(() => ID, { description: 'Sent as `webhook-id`; the same on every attempt.' }) eventId!: string;
  @Field(() => String) eventType!: string;
  @Field(() => String, { description: '`pending`, `succeeded` or `failed`' }) status!: string;
  @Field(() => Int) attemptCount!: number;
  @Field(() => [DeliveryAttemptType]) attempts!: DeliveryAttemptType[];
  @Field(() => Date, { nullable: true }) nextAttemptAt!: Date | null;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
}

export const toDelivery = (d: DeliveryDoc): DeliveryType => ({
  id: d._id,
  webhookId: d.webhookId,
  eventId: d.eventId,
  eventType: d.eventType,
  status: d.status,
  attemptCount: d.attempts?.length ?? 0,
  attempts: (d.attempts ?? []).map((a) => ({ ...a, statusCode: a.statusCode ?? null, error: a.error ?? null })),
  nextAttemptAt: d.nextAttemptAt ?? null,
  createdAt: d.createdAt,
  updatedAt: d.updatedAt,
});

@ObjectType('AssetWebhookDeliveryPage')
export class DeliveryPageType {
  @Field(() => [DeliveryType]) items!: DeliveryType[];
  @Field(() => String, { description: 'Empty at the end.' }) nextCursor!: string;
}

@ObjectType('AssetWebhookDeletion')
export class WebhookDeletionType {
  @Field(() => ID) id!: string;
  @Field(() => Boolean) deleted!: boolean;
}
