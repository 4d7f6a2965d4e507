import { IsArray, IsBoolean, IsOptional, IsString, MaxLength } from 'class-validator';
import { Directive, Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import { GraphQLJSON } from 'graphql-scalars';

@ObjectType('DatabaseRequirements')
export class DatabaseRequirements {
  @Field(() => String) engine!: string;
  @Field(() => String) minVersion!: string;
  @Field(() => Int, { description: 'GiB' }) minStorageGb!: number;
}

@ObjectType('RuntimeOption', { description: 'A tested publishing runtime version.' })
export class RuntimeOptionType {
  @Field(() => String) version!: string;
  @Field(() => String) label!: string;
  @Field(() => String) image!: string;
  @Field(() => String) digest!: string;
  @Field(() => DatabaseRequirements) databaseRequirements!: DatabaseRequirements;
  @Field(() => Int, { description: 'MiB' }) memoryFloorMb!: number;
  @Field(() => Boolean) isDefault!: boolean;
  @Field(() => [String], { description: 'Versions that may upgrade straight to this one.' })
  upgradePredecessors!: string[];
}

@ObjectType('OperationStep')
export class OperationStepType {
  @Field(() => String) id!: string;
  @Field(() => String) status!: string;
  @Field(() => Date, { nullable: true }) startedAt!: Date | null;
  @Field(() => Date, { nullable: true }) finishedAt!: Date | null;
  @Field(() => Int) attempts!: number;
}

@ObjectType('Operation', { description: 'A durable asynchronous lifecycle operation.' })
@Directive('@key(fields: "id")')
export class OperationType {
  @Field(() => ID) id!: string;
  @Field(() => ID) projectId!: string;
  @Field(() => String) resourceType!: string;
  @Field(() => ID) resourceId!: string;
  @Field(() => String) operationType!: string;
  @Field(() => String, { description: '`pending`, `running`, `completed` or `failed`' }) status!: string;
  @Field(() => String) step!: string;
  @Field(() => [OperationStepType]) steps!: OperationStepType[];
  @Field(() => Int) attempt!: number;
  @Field(() => Int) maxAttempts!: number;
  @Field(() => String, { nullable: true }) errorCode!: string | null;
  @Field(() => String, { nullable: true, description: 'Redacted: never holds a secret.' }) errorMessage!: string | null;
  @Field(() => GraphQLJSON, { nullable: true }) result!: unknown;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
  @Field(() => Date, { nullable: true }) startedAt!: Date | null;
  @Field(() => Date, { nullable: true }) finishedAt!: Date | null;
}

@ObjectType('SiteProject')
export class SiteProjectType {
  @Field(() => ID) id!: string;
  @Field(() => String) sourceType!: string;
  @Field(() => String) runtime!: string;
}

@ObjectType('CreateSiteResult')
export class CreateSiteResultType {
  @Field(() => SiteProjectType) project!: SiteProjectType;
  @Field(() => String) siteUrl!: string;
  @Field(() => String) adminUrl!: string;
  @Field(() => OperationType) operation!: OperationType;
}

@ObjectType('Site')
export class SiteType {
  @Field(() => ID) projectId!: string;
  @Field(() => String) name!: string;
  @Field(() => String) status!: string;
  @Field(() => String) runtimeVersion!: string;
  @Field(() => String) siteUrl!: string;
  @Field(() => String) adminUrl!: string;
  @Field(() => String, { nullable: true }) domain!: string | null;
  @Field(() => String) deploymentMode!: string;
  @Field(() => Boolean) mailEnabled!: boolean;
  @Field(() => Date) createdAt!: Date;
}

@ObjectType('SiteInstallation')
export class SiteInstallationType {
  @Field(() => String) runtimeVersion!: string;
  @Field(() => String) runtimeLabel!: string;
  @Field(() => String) image!: string;
  @Field(() => String) digest!: string;
  @Field(() => String) status!: string;
  @Field(() => String) siteUrl!: string;
  @Field(() => String) adminUrl!: string;
  @Field(() => String, { nullable: true }) domain!: string | null;
  @Field(() => String) deploymentMode!: string;
  @Field(() => String, { nullable: true }) targetNodeId!: string | null;
  @Field(() => String, { nullable: true }) placementMode!: string | null;
  @Field(() => [String]) nodeSelectorTags!: string[];
}

@ObjectType('SiteMetadataProject')
export class SiteMetadataProjectType {
  @Field(() => ID) id!: string;
  @Field(() => String) name!: string;
  @Field(() => String) sourceType!: string;
  @Field(() => String) runtime!: string;
  @Field(() => Date) createdAt!: Date;
}

@ObjectType('ManagedDatabase')
export class ManagedDatabaseType {
  @Field(() => String) engine!: string;
  @Field(() => String) version!: string;
  @Field(() => Int) storageGb!: number;
  @Field(() => String) status!: string;
}

@ObjectType('SiteMailFlags')
export class SiteMailFlagsType {
  @Field(() => Boolean) enabled!: boolean;
  @Field(() => Boolean) transactionalConfigured!: boolean;
  @Field(() => Boolean) newsletterProviderConfigured!: boolean;
}

@ObjectType('SiteMetadata')
export class SiteMetadataType {
  @Field(() => SiteInstallationType) installation!: SiteInstallationType;
  @Field(() => SiteMetadataProjectType) project!: SiteMetadataProjectType;
  @Field(() => ManagedDatabaseType) database!: ManagedDatabaseType;
  @Field(() => OperationType, { nullable: true }) activeOperation!: OperationType | null;
  @Field(() => SiteMailFlagsType) mail!: SiteMailFlagsType;
}

@InputType('CreateSiteInput')
export class CreateSiteInput {
  @Field(() => String, { nullable: true }) @IsOptional() @IsString() @MaxLength(200) name?: string;
  @Field(() => String, { nullable: true }) @IsOptional() @IsString() runtimeVersion?: string;
  @Field(() => String, { nullable: true }) @IsOptional() @IsString() deploymentMode?: string;
  @Field(() => String, { nullable: true }) @IsOptional() @IsString() targetNodeId?: string;
  @Field(() => String, { nullable: true }) @IsOptional() @IsString() placementMode?: string;
  @Field(() => [String], { nullable: true }) @IsOptional() @IsArray() nodeSelectorTags?: string[];
  @Field(() => Boolean, { nullable: true }) @IsOptional() @IsBoolean() mailEnabled?: boolean;
}

/** The `Project` entity owned by identity; the publisher adds its `site`. */
@ObjectType('Project')
@Directive('@key(fields: "id")')
export class ProjectRef {
  @Field(() => ID) id!: string;
}
