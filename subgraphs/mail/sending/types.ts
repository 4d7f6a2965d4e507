import { GraphQLJSON } from 'graphql-scalars';
import { Field, ID, Int, ObjectType } from 'type-graphql';

@ObjectType('MailSendResult')
export class MailSendResultType {
  @Field(() => ID) id!: string;
  @Field(() => String, { description: '`queued`, or `recorded` for a test key' }) status!: string;
}

@ObjectType('MailTimelineItem')
export class MailTimelineItemType {
  @Field(() => String) type!: string;
  @Field(() => String) label!: string;
  @Field(() => Date) createdAt!: Date;
  @Field(() => GraphQLJSON, { nullable: true }) metadata!: Record<string, unknown> | null;
}

@ObjectType('MailTimeline')
export class MailTimelineType {
  @Field(() => [MailTimelineItemType]) items!: MailTimelineItemType[];
}

@ObjectType('MailEventRecord')
export class MailEventRecordType {
  @Field(() => ID) id!: string;
  @Field(() => String) type!: string;
  @Field(() => String) resourceType!: string;
  @Field(() => String) resourceId!: string;
  @Field(() => String, { nullable: true }) messageId!: string | null;
  @Field(() => Date) createdAt!: Date;
  @Field(() => GraphQLJSON) data!: Record<string, unknown>;
}

@ObjectType('MailEventPage')
export class MailEventPageType {
  @Field(() => [MailEventRecordType]) items!: MailEventRecordType[];
  @Field(() => String, { nullable: true }) nextCursor!: string | null;
}

@ObjectType('MailWebhook')
export class MailWebhookType {
  @Field(() => ID) id!: string;
  @Field(() => String) url!: string;
  @Field(() => [String]) eventTypes!: string[];
  @Field(() => String, { nullable: true }) description!: string | null;
  @Field(() => Boolean) enabled!: boolean;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
}

@ObjectType('MailWebhookCreated', { description: 'The new endpoint with its signing secret, shown only here and on rotate.' })
export class MailWebhookCreatedType extends MailWebhookType {
  @Field(() => String) secret!: string;
}

@ObjectType('MailWebhookList')
export class MailWebhookListType {
  @Field(() => [MailWebhookType]) items!: MailWebhookType[];
  @Field(() => String, { nullable: true }) nextCursor!: string | null;
}

@ObjectType('MailWebhookSecret')
export class MailWebhookSecretType {
  @Field(() => String) secret!: string;
}

@ObjectType('MailDeliveryAttempt')
export class MailDeliveryAttemptType {
  @Field(() => Int, { nullable: true }) statusCode!: number | null;
  @Field(() => Int) durationMs!: number;
  @Field(() => Date) at!: Date;
  @Field(() => String, { nullable: true, description: 'At most 2 KiB of the response body' }) responseExcerpt!: string | null;
  @Field(() => String, { nullable: true }) error!: string | null;
}

@ObjectType('MailWebhookDelivery')
export class MailWebhookDeliveryType {
  @Field(() => ID) id!: string;
  @Field(() => ID) webhookId!: string;
  @Field(() => ID) eventId!: string;
  @Field(() => String) eventType!: string;
  @Field(() => String, { description: '`pending`, `succeeded` or `failed`' }) status!: string;
  @Field(() => Int) attemptCount!: number;
  @Field(() => Date, { nullable: true }) nextAttemptAt!: Date | null;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
  @Field(() => [MailDeliveryAttemptType]) attempts!: MailDeliveryAttemptType[];
}

@ObjectType('MailWebhookDeliveryPage')
export class MailWebhookDeliveryPageType {
  @Field(() => [MailWebhookDeliveryType]) items!: MailWebhookDeliveryType[];
  @Field(() => String, { nullable: true }) nextCursor!: string | null;
}
