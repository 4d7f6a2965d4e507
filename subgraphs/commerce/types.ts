import { GraphQLJSON } from 'graphql-scalars';
import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';

/**
 * The commerce subgraph's types. No type selects a secret: environments show `has*` booleans only.
 * Every name carries the `Commerce` prefix so composition never meets another area's type.
 */

@ObjectType('CommerceOperation', { description: 'Spec 3.2: `queued`, `running`, `succeeded` or `failed`.' })
export class CommerceOperationType {
  @Field(() => ID) id!: string;
  @Field(() => ID) projectId!: string;
  @Field(() => String, { description: '`connect`, `verify` or `release`' }) type!: string;
  @Field(() => String) status!: string;
  @Field(() => String) step!: string;
  @Field(() => String, { nullable: true }) environment!: string | null;
  @Field(() => ID, { nullable: true }) releaseId!: string | null;
  @Field(() => String, { nullable: true }) errorCode!: string | null;
  @Field(() => String, { nullable: true, description: 'Redacted: never holds a secret.' }) errorMessage!: string | null;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date, { nullable: true }) startedAt!: Date | null;
  @Field(() => Date, { nullable: true }) finishedAt!: Date | null;
}

@ObjectType('CommerceVerification')
export class CommerceVerificationType {
  @Field(() => String, { description: '`pending`, `ready` or `invalid`' }) state!: string;
  @Field(() => ID, { nullable: true }) operationId!: string | null;
  @Field(() => Date, { nullable: true }) verifiedAt!: Date | null;
  @Field(() => String, { nullable: true }) errorCode!: string | null;
}

@ObjectType('CommerceEnvironment', { description: 'Credentials are write-only: only `has*` flags are shown.' })
export class CommerceEnvironmentType {
  @Field(() => String) name!: string;
  @Field(() => String, { nullable: true }) configPath!: string | null;
  @Field(() => String, { nullable: true }) configName!: string | null;
  @Field(() => String, { nullable: true }) appUrl!: string | null;
  @Field(() => String, { nullable: true }) clientId!: string | null;
  @Field(() => String, { nullable: true }) scopes!: string | null;
  @Field(() => String, { nullable: true }) storefrontId!: string | null;
  @Field(() => String, { nullable: true }) customerAccountClientId!: string | null;
  @Field(() => String, { nullable: true }) customerAccountUrl!: string | null;
  @Field(() => Boolean) hasClientSecret!: boolean;
  @Field(() => Boolean) hasAutomationToken!: boolean;
  @Field(() => Boolean) hasPublicStorefrontToken!: boolean;
  @Field(() => Boolean) hasPrivateStorefrontToken!: boolean;
  @Field(() => Boolean) hasCustomerAccountSecret!: boolean;
  @Field(() => Boolean) hasSessionSecret!: boolean;
  @Field(() => Int, {
    description:
      "Its releases' memory limit in MiB: the one set, else the default (512); a release keeps the one it started with",
  })
  memoryMb!: number;
  @Field(() => CommerceVerificationType) verification!: CommerceVerificationType;
  @Field(() => Int) revision!: number;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
}

@ObjectType('CommerceConnection')
export class CommerceConnectionType {
  @Field(() => ID) id!: string;
  @Field(() => ID) projectId!: string;
  @Field(() => String) kind!: string;
  @Field(() => String) storeDomain!: string;
  @Field(() => String, { nullable: true }) developmentBranch!: string | null;
  @Field(() => Boolean) confirmGenericStorefront!: boolean;
  @Field(() => GraphQLJSON) settings!: Record<string, unknown>;
  @Field(() => GraphQLJSON) storefrontSettings!: Record<string, unknown>;
  @Field(() => String, { description: '`pending`, `ready`, `invalid` or `disabled`' }) state!: string;
  @Field(() => CommerceOperationType, { nullable: true }) operation!: CommerceOperationType | null;
  @Field(() => [CommerceEnvironmentType]) environments!: CommerceEnvironmentType[];
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
}

@ObjectType('CommerceRelease')
export class CommerceReleaseType {
  @Field(() => ID) id!: string;
  @Field(() => ID) projectId!: string;
  @Field(() => String) environment!: string;
  @Field(() => String, { description: '`queued`, `running`, `healthy`, `failed`, `degraded` or `cancelled`' })
  status!: string;
  @Field(() => ID, { nullable: true }) previewId!: string | null;
  @Field(() => ID, { nullable: true }) sourcePreviewId!: string | null;
  @Field(() => ID) operationId!: string;
  @Field(() => Int) attempts!: number;
  @Field(() => String, { nullable: true }) errorCode!: string | null;
  @Field(() => String, { nullable: true }) errorMessage!: string | null;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
  @Field(() => Date, { nullable: true }) finishedAt!: Date | null;
  @Field(() => String, {
    nullable: true,
    description: "A bundle release's own address on the edge (`http://<release_id>.releases.localhost:<edge>/`)",
  })
  url!: string | null;
  @Field(() => String, { nullable: true, description: "The SHA-256 of a bundle release's artifact" })
  artifact!: string | null;
  @Field(() => Int, {
    nullable: true,
    description: "A bundle release's memory limit in MiB, its environment's when it was created",
  })
  memoryMb!: number | null;
}

@ObjectType('CommerceReleasePage')
export class CommerceReleasePageType {
  @Field(() => [CommerceReleaseType]) items!: CommerceReleaseType[];
  @Field(() => String, { nullable: true }) nextCursor!: string | null;
}

@ObjectType('CommerceWebhookObservation')
export class CommerceWebhookType {
  @Field(() => ID, { description: 'The webhook id the commerce platform signed.' }) id!: string;
  @Field(() => String) topic!: string;
  @Field(() => String) storeDomain!: string;
  @Field(() => GraphQLJSON, { nullable: true }) payload!: unknown;
  @Field(() => Boolean) signatureVerified!: boolean;
  @Field(() => Date) receivedAt!: Date;
}

@ObjectType('CommerceWebhookPage')
export class CommerceWebhookPageType {
  @Field(() => [CommerceWebhookType]) items!: CommerceWebhookType[];
  @Field(() => String, { nullable: true }) nextCursor!: string | null;
}

@ObjectType('CommerceStorefrontSettings')
export class CommerceStorefrontSettingsType {
  @Field(() => GraphQLJSON) settings!: Record<string, unknown>;
  @Field(() => Date) updatedAt!: Date;
}

@ObjectType('CommerceAnalyticsBucket')
export class CommerceAnalyticsBucketType {
  @Field(() => Date) start!: Date;
  @Field(() => Int) requests!: number;
  @Field(() => Int) errors!: number;
}

@ObjectType('CommerceAnalyticsTotals')
export class CommerceAnalyticsTotalsType {
  @Field(() => Int) requests!: number;
  @Field(() => Int) errors!: number;
}

@ObjectType('CommerceAnalytics')
export class CommerceAnalyticsType {
  @Field(() => String) range!: string;
  @Field(() => String, { description: '`minute`, `hour` or `day`' }) granularity!: string;
  @Field(() => Date) from!: Date;
  @Field(() => Date) to!: Date;
  @Field(() => CommerceAnalyticsTotalsType) totals!: CommerceAnalyticsTotalsType;
  @Field(() => [CommerceAnalyticsBucketType]) buckets!: CommerceAnalyticsBucketType[];
  @Field(() => [CommerceAnalyticsBucketType], { nullable: true, description: '`7d` only: hour buckets.' })
  timeseries!: CommerceAnalyticsBucketType[] | null;
  @Field(() => String, { nullable: true }) timeseriesGranularity!: string | null;
}

@InputType('CommerceConnectInput')
export class CommerceConnectInput {
  @Field(() => String) kind!: string;
  @Field(() => String) storeDomain!: string;
  @Field(() => String, { nullable: true }) developmentBranch?: string | null;
  @Field(() => Boolean, { nullable: true }) confirmGenericStorefront?: boolean | null;
  @Field(() => GraphQLJSON, { nullable: true }) settings?: unknown;
}

/** Both kinds' fields: the service refuses those of the other kind (422), so the rule has one home. */
@InputType('CommerceEnvironmentInput')
export class CommerceEnvironmentInput {
  @Field(() => String, { nullable: true }) configPath?: string | null;
  @Field(() => String, { nullable: true }) configName?: string | null;
  @Field(() => String, { nullable: true }) appUrl?: string | null;
  @Field(() => String, { nullable: true }) clientId?: string | null;
  @Field(() => String, { nullable: true }) clientSecret?: string | null;
  @Field(() => String, { nullable: true }) automationToken?: string | null;
  @Field(() => String, { nullable: true }) scopes?: string | null;
  @Field(() => String, { nullable: true }) publicStorefrontToken?: string | null;
  @Field(() => String, { nullable: true }) privateStorefrontToken?: string | null;
  @Field(() => String, { nullable: true }) storefrontId?: string | null;
  @Field(() => String, { nullable: true }) customerAccountClientId?: string | null;
  @Field(() => String, { nullable: true }) customerAccountSecret?: string | null;
  @Field(() => String, { nullable: true }) customerAccountUrl?: string | null;
  @Field(() => String, { nullable: true }) sessionSecret?: string | null;
  @Field(() => Int, {
    nullable: true,
    description:
      "Its releases' memory limit in MiB: a whole number from 128 to the plan's maximum (free 512, pro 1024); omitted or null: the default, 512",
  })
  memoryMb?: number | null;
}
