import { IsArray, IsBoolean, IsOptional, IsString } from 'class-validator';
import { Directive, Field, Float, ID, InputType, Int, ObjectType } from 'type-graphql';
import { OperationType } from '../../core/operations/graphql';

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
  @Field(() => String, { description: '`provisioning`, `running`, `stopped` or `provision_failed`' }) status!: string;
  @Field(() => String, { description: '`production` or `staging`' }) environment!: string;
  @Field(() => ID, { nullable: true, description: 'Staging copies: the site copied.' }) sourceProjectId!: string | null;
  @Field(() => ID, { nullable: true, description: 'Staging copies: the recovery point copied.' }) sourceRecoveryPointId!:
    string | null;
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
  @Field(() => ID, { nullable: true, description: 'Its activity feed: `/api/v1/databases/{id}/operation-activity`.' })
  id!: string | null;
  @Field(() => String) engine!: string;
  @Field(() => String) version!: string;
  @Field(() => Int) storageGb!: number;
  @Field(() => String) status!: string;
}

@ObjectType('SiteMailFlags')
export class SiteMailFlagsType {
  @Field(() => Boolean) enabled!: boolean;
  @Field(() => Boolean, { description: 'A transactional sender is set.' }) transactionalConfigured!: boolean;
  @Field(() => Boolean, { description: 'The transactional sender is a verified sender of the account.' })
  senderVerified!: boolean;
  @Field(() => Boolean) newsletterProviderConfigured!: boolean;
}

@ObjectType('DnsRecord')
export class DnsRecordType {
  @Field(() => String) type!: string;
  @Field(() => String) name!: string;
  @Field(() => String) value!: string;
}

@ObjectType('SiteDomain', { description: 'A custom domain attached to a site.' })
export class SiteDomainType {
  @Field(() => String, { description: 'Normalised ASCII (punycode) name.' }) name!: string;
  @Field(() => String, {
    description: '`pending_verification` until the TXT token is seen, then `active`; `expired` when the claim lapsed unverified',
  })
  status!: string;
  @Field(() => DnsRecordType, { description: 'The record to create at the DNS host so traffic reaches the site.' })
  dnsRecord!: DnsRecordType;
  @Field(() => DnsRecordType, { nullable: true, description: 'The TXT record proving ownership; null once verified.' })
  verificationRecord!: DnsRecordType | null;
  @Field(() => Date, { nullable: true, description: 'When an unverified claim stops holding the name; null once verified.' })
  expiresAt!: Date | null;
  @Field(() => Date) updatedAt!: Date;
}

@ObjectType('SiteNode', { description: 'The connected node a site is placed on.' })
export class SiteNodeType {
  @Field(() => ID) id!: string;
  @Field(() => String, { description: '`reachable`, `unreachable` (silent for 30 s) or `draining`.' }) status!: string;
}

@ObjectType('SiteProcessExit', { description: 'How the site’s process last ended.' })
export class SiteProcessExitType {
  @Field(() => Int, { nullable: true, description: 'Exit code; null when a signal ended it.' }) code!: number | null;
  @Field(() => String, { nullable: true, description: 'The signal that ended it, e.g. `SIGKILL`.' }) signal!: string | null;
  @Field(() => Date) at!: Date;
  @Field(() => String, {
    nullable: true,
    description: '`out_of_memory` when the kernel ended it for going over its sandbox’s memory limit; else null.',
  })
  reason!: string | null;
}

@ObjectType('SiteProcess', {
  description:
    'A site’s process: a hosted site’s as the platform’s supervisor sees it, a connected-node site’s as its node reported it.',
})
export class SiteProcessType {
  @Field(() => String, {
    description:
      '`starting` (not answering yet), `running`, `restarting` (exited unasked, waiting to be started again), `stopping`, `stopped`, `crashed` (kept crashing; given up) or `sleeping` (stopped for being idle; its next request wakes it); for a connected-node site, `unknown` once its node is unreachable (the rest is what the node last reported).',
  })
  status!: string;
  @Field(() => Int, { description: 'Automatic restarts after a crash since the platform began running the site.' })
  restarts!: number;
  @Field(() => SiteProcessExitType, { nullable: true }) lastExit!: SiteProcessExitType | null;
  @Field(() => Int, { nullable: true, description: 'The memory ceiling the process runs with, in MiB.' })
  memoryFloorMb!: number | null;
  @Field(() => Date, { nullable: true }) startedAt!: Date | null;
  @Field(() => Date, { nullable: true, description: 'When it was put to sleep, while `sleeping`; else null.' })
  sleptAt!: Date | null;
  @Field(() => Date, {
    nullable: true,
    description:
      "When its node reported it (a connected node, or the hosted node's agent outside the platform; heartbeats report it every 5 s); null when read live from the platform's own plane.",
  })
  reportedAt!: Date | null;
}

@ObjectType('SiteMetadata')
export class SiteMetadataType {
  @Field(() => SiteInstallationType) installation!: SiteInstallationType;
  @Field(() => SiteMetadataProjectType) project!: SiteMetadataProjectType;
  @Field(() => ManagedDatabaseType) database!: ManagedDatabaseType;
  @Field(() => OperationType, { nullable: true }) activeOperation!: OperationType | null;
  @Field(() => SiteDomainType, { nullable: true }) domain!: SiteDomainType | null;
  @Field(() => SiteMailFlagsType) mail!: SiteMailFlagsType;
  @Field(() => SiteNodeType, { nullable: true, description: 'A connected-node site’s node; null for a hosted site.' })
  node!: SiteNodeType | null;
  @Field(() => SiteProcessType, {
    nullable: true,
    description:
      'A hosted site’s process where this platform runs it; a connected-node site’s as its node’s agent reports it; null for the simulated executor and for a site its node’s agent does not run.',
  })
  process!: SiteProcessType | null;
}

/** Its rules are the service's (site-creation.ts: `invalid_name` and friends), for REST and GraphQL alike (decision 0330). */
@InputType('CreateSiteInput')
export class CreateSiteInputType {
  @Field(() => String, { nullable: true }) @IsOptional() @IsString() name?: string;
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

@ObjectType('RecoveryPointCapture', { description: 'One captured part of a recovery point.' })
export class RecoveryPointCaptureType {
  @Field(() => String, { description: '`pending`, `captured`, `failed` or `skipped`' }) status!: string;
  @Field(() => String, { nullable: true, description: 'Snapshot identifier (the image digest for the release).' })
  snapshotId!: string | null;
  @Field(() => Float, { nullable: true }) sizeBytes!: number | null;
  @Field(() => String, { nullable: true, description: 'Hex SHA-256 of the stored bytes (null for a simulated capture).' })
  sha256!: string | null;
  @Field(() => Date, { nullable: true }) capturedAt!: Date | null;
}

@ObjectType('RecoveryPoint', { description: 'A coordinated capture of database, persistent content and exact runtime release.' })
export class RecoveryPointType {
  @Field(() => ID) id!: string;
  @Field(() => ID) projectId!: string;
  @Field(() => String, { description: '`manual`, `pre_upgrade` or `staging_source`' }) kind!: string;
  @Field(() => String, { nullable: true }) reason!: string | null;
  @Field(() => String, { description: '`pending` while capturing, then `completed` or `incomplete`' }) status!: string;
  @Field(() => String) runtimeVersion!: string;
  @Field(() => String) runtimeDigest!: string;
  @Field(() => String) runtimeImage!: string;
  @Field(() => RecoveryPointCaptureType) database!: RecoveryPointCaptureType;
  @Field(() => RecoveryPointCaptureType) content!: RecoveryPointCaptureType;
  @Field(() => RecoveryPointCaptureType) release!: RecoveryPointCaptureType;
  @Field(() => ID) operationId!: string;
  @Field(() => String, { nullable: true, description: 'Why an incomplete point is incomplete.' }) errorCode!: string | null;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date, { nullable: true }) completedAt!: Date | null;
}

@ObjectType('RecoveryPointResult')
export class RecoveryPointResultType {
  @Field(() => RecoveryPointType) recoveryPoint!: RecoveryPointType;
  @Field(() => OperationType) operation!: OperationType;
}

@ObjectType('UpgradeResult')
export class UpgradeResultType {
  @Field(() => RecoveryPointType, { description: 'The pre-upgrade recovery point, recorded before anything changes.' })
  recoveryPoint!: RecoveryPointType;
  @Field(() => OperationType) operation!: OperationType;
  @Field(() => String) fromVersion!: string;
  @Field(() => String) targetVersion!: string;
}

@ObjectType('StagingResult')
export class StagingResultType {
  @Field(() => RecoveryPointType) sourceRecoveryPoint!: RecoveryPointType;
  @Field(() => OperationType) operation!: OperationType;
  @Field(() => SiteProjectType, { description: 'The staging copy’s project.' }) project!: SiteProjectType;
  @Field(() => String) siteUrl!: string;
  @Field(() => String) adminUrl!: string;
}

@ObjectType('SiteHistory')
export class SiteHistoryType {
  @Field(() => ID) projectId!: string;
  @Field(() => OperationType, { nullable: true, description: 'The lifecycle operation running now.' })
  activeOperation!: OperationType | null;
  @Field(() => OperationType, { nullable: true, description: 'The most recent lifecycle operation, running or finished.' })
  latestOperation!: OperationType | null;
  @Field(() => [RecoveryPointType], { description: 'Newest first.' }) recoveryPoints!: RecoveryPointType[];
}

@ObjectType('TransactionalMail')
export class TransactionalMailType {
  @Field(() => Boolean) configured!: boolean;
  @Field(() => String, { nullable: true }) senderEmail!: string | null;
  @Field(() => Boolean) verified!: boolean;
}

@ObjectType('NewsletterProviderSettings', { description: 'Secret-safe: the API key shows only as hasApiKey.' })
export class NewsletterProviderSettingsType {
  @Field(() => Boolean) configured!: boolean;
  @Field(() => String, { nullable: true }) domain!: string | null;
  @Field(() => String, { nullable: true }) region!: string | null;
  @Field(() => String, { nullable: true }) fromEmail!: string | null;
  @Field(() => String, { nullable: true }) fromName!: string | null;
  @Field(() => Boolean) hasApiKey!: boolean;
  @Field(() => Date, { nullable: true }) updatedAt!: Date | null;
}

@ObjectType('SiteMailSettings')
export class SiteMailSettingsType {
  @Field(() => Boolean) enabled!: boolean;
  @Field(() => TransactionalMailType) transactional!: TransactionalMailType;
  @Field(() => NewsletterProviderSettingsType) newsletterProvider!: NewsletterProviderSettingsType;
}

/** Its rules (lengths, shapes) are the service's (mail-settings.ts), so every transport meets the same errors (decision 0330). */
@InputType('NewsletterProviderInput')
export class NewsletterProviderInputType {
  @Field(() => String) @IsString() domain!: string;
  @Field(() => String) @IsString() region!: string;
  @Field(() => String, { nullable: true, description: 'Write-only; omitted keeps the stored key.' })
  @IsOptional()
  @IsString()
  apiKey?: string | null;
  @Field(() => String) @IsString() fromEmail!: string;
  @Field(() => String, { nullable: true }) @IsOptional() @IsString() fromName?: string | null;
}
