import { Field, Float, ID, InputType, Int, ObjectType } from 'type-graphql';
import type { AccessLogDoc, InventoryExportDoc, ObjstoreBucketDoc, RelocationDoc } from './model';
import type { BucketAnalytics } from './analytics';
import type { ObjectRow } from './query';
import { ReplicationPolicyInput } from '../storage';

@InputType('ObjstoreStorageInput', { description: 'Storage settings of an object-store bucket (spec 2.3 attributes).' })
export class StorageInputType {
  @Field(() => Boolean, { nullable: true }) versioning?: boolean;
  @Field(() => Int, { nullable: true }) retentionDays?: number | null;
  @Field(() => Float, { nullable: true }) maxBytes?: number | null;
  @Field(() => ReplicationPolicyInput, { nullable: true }) replicationPolicy?: ReplicationPolicyInput;
  @Field(() => String, { nullable: true }) defaultVisibility?: 'public' | 'private';
  @Field(() => String, { nullable: true }) cacheControl?: string;
}

@ObjectType('ObjstoreWebsite')
export class WebsiteType {
  @Field(() => ID) bucketId!: string;
  @Field(() => Boolean) enabled!: boolean;
  @Field(() => String, { nullable: true }) indexObject!: string | null;
  @Field(() => String, { nullable: true }) errorObject!: string | null;
  @Field(() => String, { nullable: true, description: 'Where the CDN serves the website (null when off).' }) url!: string | null;
  @Field(() => Date) updatedAt!: Date;
}

export const toWebsite = (m: ObjstoreBucketDoc, cdnUrl: string): WebsiteType => ({
  bucketId: m._id,
  enabled: !!m.website,
  indexObject: m.website?.indexObject ?? null,
  errorObject: m.website?.errorObject ?? null,
  url: m.website ? `${cdnUrl}/w/${m._id}/` : null,
  updatedAt: m.updatedAt,
});

@ObjectType('BucketRelocation')
export class RelocationType {
  @Field(() => ID) id!: string;
  @Field(() => ID) bucketId!: string;
  @Field(() => String) fromRegion!: string;
  @Field(() => String) toRegion!: string;
  @Field(() => String, { description: '`queued`, `copying`, `switching`, `succeeded`, `failed`' }) status!: string;
  @Field(() => Int) objectsTotal!: number;
  @Field(() => Int) objectsCopied!: number;
  @Field(() => Int) objectsSwitched!: number;
  @Field(() => Float) bytesCopied!: number;
  @Field(() => String, { nullable: true }) error!: string | null;
  @Field(() => String) statusUrl!: string;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date, { nullable: true }) startedAt!: Date | null;
  @Field(() => Date, { nullable: true }) finishedAt!: Date | null;
}

export const toRelocation = (r: RelocationDoc, baseUrl: string): RelocationType => ({
  id: r._id,
  bucketId: r.bucketId,
  fromRegion: r.fromRegion,
  toRegion: r.toRegion,
  status: r.status,
  objectsTotal: r.objectsTotal ?? 0,
  objectsCopied: r.objectsCopied ?? 0,
  objectsSwitched: r.objectsSwitched ?? 0,
  bytesCopied: r.bytesCopied ?? 0,
  error: r.error ?? null,
  statusUrl: `${baseUrl}/api/v1/assets/buckets/${r.bucketId}/relocations/${r._id}`,
  createdAt: r.createdAt,
  startedAt: r.startedAt ?? null,
  finishedAt: r.finishedAt ?? null,
});

@ObjectType('BucketPrefixActivity')
export class PrefixActivityType {
  @Field(() => String) prefix!: string;
  @Field(() => Float) requests!: number;
}

@ObjectType('BucketAnalyticsDay')
export class AnalyticsDayType {
  @Field(() => String) day!: string;
  @Field(() => Float) requests!: number;
  @Field(() => Float) errors!: number;
  @Field(() => Float) bytesIn!: number;
  @Field(() => Float) bytesOut!: number;
}

@ObjectType('BucketAnalytics')
export class AnalyticsType {
  @Field(() => ID) bucketId!: string;
  @Field(() => Date) start!: Date;
  @Field(() => Date) end!: Date;
  @Field(() => Float) storedBytes!: number;
  @Field(() => Int) objectCount!: number;
  @Field(() => Float) requests!: number;
  @Field(() => Float) errors!: number;
  @Field(() => Float) bytesIn!: number;
  @Field(() => Float) bytesOut!: number;
  @Field(() => Float, { description: 'bytes_in + bytes_out' }) bandwidthBytes!: number;
  @Field(() => [PrefixActivityType]) topPrefixes!: PrefixActivityType[];
  @Field(() => [AnalyticsDayType]) days!: AnalyticsDayType[];
}

export const toAnalytics = (bucketId: string, a: BucketAnalytics): AnalyticsType => ({
  bucketId,
  ...a,
  bandwidthBytes: a.bytesIn + a.bytesOut,
});

@ObjectType('BucketAccessLogEntry')
export class AccessLogType {
  @Field(() => ID) id!: string;
  @Field(() => String) operation!: string;
  @Field(() => String, { nullable: true }) key!: string | null;
  @Field(() => Int) status!: number;
  @Field(() => Float) bytesIn!: number;
  @Field(() => Float) bytesOut!: number;
  @Field(() => String) requestId!: string;
  @Field(() => String, { nullable: true }) accessKeyId!: string | null;
  @Field(() => Date) time!: Date;
}

@ObjectType('BucketAccessLogPage')
export class AccessLogPageType {
  @Field(() => [AccessLogType]) items!: AccessLogType[];
  @Field(() => String) nextCursor!: string;
}

export const toAccessLog = (e: AccessLogDoc): AccessLogType => ({
  id: e._id,
  operation: e.operation,
  key: e.key ?? null,
  status: e.status,
  bytesIn: e.bytesIn,
  bytesOut: e.bytesOut,
  requestId: e.requestId,
  accessKeyId: e.accessKeyId ?? null,
  time: e.at,
});

@ObjectType('BucketInventoryExport')
export class InventoryExportType {
  @Field(() => ID) id!: string;
  @Field(() => ID) bucketId!: string;
  @Field(() => String) format!: string;
  @Field(() => String, { nullable: true }) prefix!: string | null;
  @Field(() => String, { description: '`queued`, `running`, `succeeded`, `failed`' }) status!: string;
  @Field(() => Int, { nullable: true }) rowCount!: number | null;
  @Field(() => Float, { nullable: true }) size!: number | null;
  @Field(() => String, { nullable: true }) error!: string | null;
  @Field(() => String) statusUrl!: string;
  @Field(() => String, { nullable: true, description: 'The file, once written.' }) fileUrl!: string | null;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date, { nullable: true }) finishedAt!: Date | null;
}

export const toInventoryExport = (d: InventoryExportDoc, baseUrl: string): InventoryExportType => {
  const statusUrl = `${baseUrl}/api/v1/buckets/${d.bucketId}/inventory-exports/${d._id}`;
  return {
    id: d._id,
    bucketId: d.bucketId,
    format: d.format,
    prefix: d.prefix ?? null,
    status: d.status,
    rowCount: d.rowCount ?? null,
    size: d.size ?? null,
    error: d.error ?? null,
    statusUrl,
    fileUrl: d.status === 'succeeded' ? `${statusUrl}/file` : null,
    createdAt: d.createdAt,
    finishedAt: d.finishedAt ?? null,
  };
};

@InputType('BucketQueryInput')
export class QueryInputType {
  @Field(() => String, { nullable: true }) prefix?: string | null;
  @Field(() => String, { nullable: true }) suffix?: string | null;
  @Field(() => String, { nullable: true }) contentType?: string | null;
  @Field(() => Float, { nullable: true }) minSize?: number | null;
  @Field(() => Float, { nullable: true }) maxSize?: number | null;
  @Field(() => String, { nullable: true }) updatedAfter?: string | null;
  @Field(() => Int, { nullable: true }) limit?: number | null;
}

@ObjectType('BucketObjectRow')
export class ObjectRowType {
  @Field(() => String) key!: string;
  @Field(() => ID) assetId!: string;
  @Field(() => Float) size!: number;
  @Field(() => String) contentType!: string;
  @Field(() => String) sha256!: string;
  @Field(() => Int) version!: number;
  @Field(() => String) visibility!: string;
  @Field(() => String) status!: string;
  @Field(() => Date) updatedAt!: Date;
}

@ObjectType('BucketQueryResult')
export class QueryResultType {
  @Field(() => [ObjectRowType]) rows!: ObjectRow[];
  @Field(() => Int) rowCount!: number;
  @Field(() => Boolean, { description: 'More objects matched than the limit (at most 1,000).' }) truncated!: boolean;
}
