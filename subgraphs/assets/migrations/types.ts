import { Field, ID, InputType, Int, ObjectType, Float } from 'type-graphql';
import type { ItemCounts, MigrationDoc, MigrationItemDoc } from './model';

@ObjectType('AssetMigrationCounts', { description: 'Items by status.' })
export class MigrationCountsType {
  @Field(() => Int) total!: number;
  @Field(() => Int) pending!: number;
  @Field(() => Int) copying!: number;
  @Field(() => Int) copied!: number;
  @Field(() => Int) failed!: number;
  @Field(() => Int) cancelled!: number;
}

@ObjectType('AssetMigration', { description: 'A durable copy of every object of a connection into a bucket.' })
export class MigrationType {
  @Field(() => ID) id!: string;
  @Field(() => ID, { description: 'The same as id (spec 2.3 job submission response).' }) jobId!: string;
  @Field(() => String) statusUrl!: string;
  @Field(() => String) reportUrl!: string;
  @Field(() => ID) connectionId!: string;
  @Field(() => ID) bucket!: string;
  @Field(() => String) folder!: string;
  @Field(() => String, {
    description: '`queued`, `running`, `succeeded`, `completed_with_errors`, `failed` or `cancelled`',
  })
  status!: string;
  @Field(() => ID, { description: 'The durable operation of the current run (operation activity).' }) operationId!: string;
  @Field(() => MigrationCountsType) counts!: MigrationCountsType;
  @Field(() => String, { nullable: true }) errorCode!: string | null;
  @Field(() => String, { nullable: true }) errorMessage!: string | null;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
  @Field(() => Date, { nullable: true }) startedAt!: Date | null;
  @Field(() => Date, { nullable: true }) finishedAt!: Date | null;
}

export const toMigration = (m: MigrationDoc, counts: ItemCounts, baseUrl: string): MigrationType => ({
  id: m._id,
  jobId: m._id,
  // The one job route; `/migrations/{id}` answers the same migration.
  statusUrl: `${baseUrl}/api/v1/assets/jobs/${m._id}`,
  reportUrl: `${baseUrl}/api/v1/assets/migrations/${m._id}/report`,
  connectionId: m.connectionId,
  bucket: m.bucketId,
  folder: m.folder ?? '',
  status: m.status,
  operationId: m.operationId,
  counts,
  errorCode: m.error?.code ?? null,
  errorMessage: m.error?.message ?? null,
  createdAt: m.createdAt,
  updatedAt: m.updatedAt,
  startedAt: m.startedAt ?? null,
  finishedAt: m.finishedAt ?? null,
});

@ObjectType('AssetMigrationItem', { description: 'One object of the source and what became of it.' })
export class MigrationItemType {
  @Field(() => ID) id!: string;
  @Field(() => String) sourceKey!: string;
  @Field(() => String) key!: string;
  @Field(() => String, { description: '`pending`, `copying`, `copied`, `failed` or `cancelled`' }) status!: string;
  @Field(() => Float, { nullable: true }) size!: number | null;
  @Field(() => String, { nullable: true, description: 'Hex SHA-256 of the bytes copied.' }) sha256!: string | null;
  @Field(() => String, { nullable: true }) sourceEtag!: string | null;
  @Field(() => String, { nullable: true }) sourceSha256!: string | null;
  @Field(() => ID, { nullable: true }) assetId!: string | null;
  @Field(() => Int) attempts!: number;
  @Field(() => String, { nullable: true }) errorCode!: string | null;
  @Field(() => String, { nullable: true }) errorMessage!: string | null;
  @Field(() => Date, { nullable: true }) copiedAt!: Date | null;
}

export const toItem = (i: MigrationItemDoc): MigrationItemType => ({
  id: i._id,
  sourceKey: i.sourceKey,
  key: i.key,
  status: i.status,
  size: i.size ?? i.sourceSize ?? null,
  sha256: i.sha256 ?? null,
  sourceEtag: i.sourceEtag ?? null,
  sourceSha256: i.sourceSha256 ?? null,
  assetId: i.assetId ?? null,
  attempts: i.attempts ?? 0,
  errorCode: i.error?.code ?? null,
  errorMessage: i.error?.message ?? null,
  copiedAt: i.copiedAt ?? null,
});

@ObjectType('AssetMigrationList')
export class MigrationListType {
  @Field(() => [MigrationType]) items!: MigrationType[];
  @Field(() => String, { description: 'Empty at the end.' }) nextCursor!: string;
}

@ObjectType('AssetMigrationReport')
export class MigrationReportType {
  @Field(() => MigrationType) migration!: MigrationType;
  @Field(() => [MigrationItemType]) items!: MigrationItemType[];
}

@InputType('AssetMigrationInput')
export class MigrationInputType {
  @Field(() => ID) connection!: string;
  @Field(() => ID, { nullable: true, description: 'Default: the default bucket.' }) bucket?: string;
  @Field(() => String, { nullable: true, description: 'Folder the keys land under.' }) folder?: string;
}
