import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import { GraphQLJSON } from 'graphql-scalars';

@ObjectType('ObjstoreEventSubscription', { description: 'An event subscription on an object-store bucket.' })
export class ObjstoreSubscriptionType {
  @Field(() => ID) id!: string;
  @Field(() => ID) bucketId!: string;
  @Field(() => String, { description: '`pull` or `push`' }) deliveryMode!: string;
  @Field(() => String, { nullable: true }) url!: string | null;
  @Field(() => [String]) eventTypes!: string[];
  @Field(() => String, { nullable: true, description: 'Literal key prefix filter.' }) prefix!: string | null;
  @Field(() => String, { nullable: true, description: 'Literal key suffix filter.' }) suffix!: string | null;
  @Field(() => Boolean) enabled!: boolean;
  @Field(() => String, { description: '`active` or `paused`' }) status!: string;
  @Field(() => Boolean) hasSigningSecret!: boolean;
  @Field(() => String, { nullable: true, description: 'Only right after create or rotation; never again.' })
  signingSecret!: string | null;
  @Field(() => Date, { nullable: true }) secretRotatedAt!: Date | null;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
}

@InputType('ObjstoreCreateSubscriptionInput')
export class CreateSubscriptionInputType {
  @Field(() => String, { nullable: true }) deliveryMode?: string | null;
  @Field(() => String, { nullable: true }) url?: string | null;
  @Field(() => [String], { nullable: true }) eventTypes?: string[] | null;
  @Field(() => String, { nullable: true }) prefix?: string | null;
  @Field(() => String, { nullable: true }) suffix?: string | null;
  @Field(() => Boolean, { nullable: true }) enabled?: boolean | null;
}

@InputType('ObjstoreUpdateSubscriptionInput')
export class UpdateSubscriptionInputType {
  @Field(() => Boolean, { nullable: true }) enabled?: boolean | null;
  @Field(() => Boolean, { nullable: true }) rotateSecret?: boolean | null;
}

@ObjectType('ObjstoreDeletedSubscription')
export class DeletedSubscriptionType {
  @Field(() => ID) id!: string;
  @Field(() => Boolean) deleted!: boolean;
}

@ObjectType('ObjstorePulledDelivery', { description: 'A claimed pull delivery.' })
export class PulledDeliveryType {
  @Field(() => ID) id!: string;
  @Field(() => ID) claimId!: string;
  @Field(() => ID) eventId!: string;
  @Field(() => String) type!: string;
  @Field(() => GraphQLJSON) data!: Record<string, unknown>;
  @Field(() => Date) claimExpiresAt!: Date;
  @Field(() => Int) attempt!: number;
}

@ObjectType('ObjstorePullBatch')
export class PullBatchType {
  @Field(() => [PulledDeliveryType]) items!: PulledDeliveryType[];
}

@ObjectType('ObjstoreDeliveryAttempt')
export class DeliveryAttemptType {
  @Field(() => Int, { nullable: true }) statusCode!: number | null;
  @Field(() => Int) durationMs!: number;
  @Field(() => Date) at!: Date;
  @Field(() => String, { nullable: true, description: 'At most 2 KiB of the answer.' }) responseExcerpt!: string | null;
  @Field(() => String, { nullable: true }) error!: string | null;
}

@ObjectType('ObjstoreDelivery')
export class DeliveryType {
  @Field(() => ID) id!: string;
  @Field(() => ID) subscriptionId!: string;
  @Field(() => ID) eventId!: string;
  @Field(() => String) type!: string;
  @Field(() => GraphQLJSON) data!: Record<string, unknown>;
  @Field(() => String) deliveryMode!: string;
  @Field(() => String, { description: 'pull: available, claimed, completed; push: pending, delivered, exhausted' })
  status!: string;
  @Field(() => [DeliveryAttemptType]) attempts!: DeliveryAttemptType[];
  @Field(() => Int) failureCount!: number;
  @Field(() => Int) claimCount!: number;
  @Field(() => Date, { nullable: true }) nextAttemptAt!: Date | null;
  @Field(() => Date, { nullable: true }) completedAt!: Date | null;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
}

@ObjectType('ObjstoreDeliveryPage')
export class DeliveryPageType {
  @Field(() => [DeliveryType]) items!: DeliveryType[];
  @Field(() => String) nextCursor!: string;
}
