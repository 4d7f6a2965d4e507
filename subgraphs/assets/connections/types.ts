import { GraphQLJSONObject } from 'graphql-scalars';
import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import type { ConnectionDoc } from './model';

@ObjectType('AssetConnection', { description: 'External storage Assets can copy from. Secrets are write-only.' })
export class ConnectionType {
  @Field(() => ID) id!: string;
  @Field(() => String) name!: string;
  @Field(() => String, { description: '`s3` or `http`' }) type!: string;
  @Field(() => GraphQLJSONObject, { description: 'Non-secret settings of the type.' }) config!: Record<string, unknown>;
  @Field(() => Boolean, { description: 's3: whether a secret access key is set.' }) hasSecretAccessKey!: boolean;
  @Field(() => Boolean, { description: 'http: whether a bearer token is set.' }) hasBearerToken!: boolean;
  @Field(() => String, { description: '`unverified`, `verified` or `failed`' }) status!: string;
  @Field(() => Date, { nullable: true }) lastVerifiedAt!: Date | null;
  @Field(() => String, { nullable: true }) lastError!: string | null;
  @Field(() => Int) revision!: number;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
}

export const toConnection = (c: ConnectionDoc): ConnectionType => ({
  id: c._id,
  name: c.name,
  type: c.type,
  config: c.config ?? {},
  hasSecretAccessKey: Boolean(c.secrets?.secret_access_key),
  hasBearerToken: Boolean(c.secrets?.bearer_token),
  status: c.status,
  lastVerifiedAt: c.lastVerifiedAt ?? null,
  lastError: c.lastError ?? null,
  revision: c.revision,
  createdAt: c.createdAt,
  updatedAt: c.updatedAt,
});

@InputType('AssetConnectionInput')
export class ConnectionInputType {
  @Field(() => String, { nullable: true }) name?: string;
  @Field(() => String, { nullable: true, description: '`s3` or `http` (create only)' }) type?: string;
  @Field(() => GraphQLJSONObject, { nullable: true }) config?: Record<string, unknown>;
  @Field(() => GraphQLJSONObject, {
    nullable: true,
    description: 'Write-only values (`secret_access_key`, `bearer_token`); null removes one.',
  })
  secrets?: Record<string, unknown>;
}
