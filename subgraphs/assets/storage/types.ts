import { GraphQLJSON, GraphQLJSONObject } from 'graphql-scalars';
import { Directive, Field, Float, ID, InputType, Int, ObjectType } from 'type-graphql';
import { type AssetDoc, type AssetVersion, type BucketDoc, type JobDoc, type SessionDoc, partCount, publicUrl } from '../records';

@ObjectType('Asset', { description: 'A stored asset of the account (spec 2.3).' })
@Directive('@key(fields: "id")')
export class AssetType {
  @Field(() => ID) id!: string;
  @Field(() => ID, { description: 'The bucket id.' }) bucket!: string;
  @Field(() => String) key!: string;
  @Field(() => String) folder!: string;
  @Field(() => String, { description: '`public` or `private`' }) visibility!: string;
  @Field(() => String) cacheControl!: string;
  @Field(() => GraphQLJSONObject) metadata!: Record<string, unknown>;
  @Field(() => String) originalName!: string;
  @Field(() => [String]) tags!: string[];
  @Field(() => String, { description: 'Sniffed from the bytes.' }) mimeType!: string;
  @Field(() => String, { description: '`image`, `video`, `audio`, `document` or `other`' }) type!: string;
  @Field(() => Float, { description: 'Bytes.' }) size!: number;
  @Field(() => String, { description: 'Hex SHA-256 of the current version.' }) checksum!: string;
  @Field(() => String) status!: string;
  @Field(() => String) scanStatus!: string;
  @Field(() => String) replicationStatus!: string;
  @Field(() => String) moderationStatus!: string;
  @Field(() => String) quarantineStatus!: string;
  @Field(() => Int) currentVersion!: number;
  @Field(() => String, { nullable: true, description: 'Public CDN address of the current version.' }) url!: string | null;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
  @Field(() => Int, { description: 'Also sent as ETag; send it back in If-Match.' }) revision!: number;
}

export const toAsset = (a: AssetDoc, cdnUrl: string): AssetType => ({
  id: a._id,
  bucket: a.bucketId,
  key: a.key,
  folder: a.folder ?? '',
  visibility: a.visibility,
  cacheControl: a.cacheControl,
  metadata: a.metadata ?? {},
  originalName: a.originalName,
  tags: a.tags ?? [],
  mimeType: a.mimeType,
  type: a.type,
  size: a.size,
  checksum: a.checksum,
  status: a.status,
  scanStatus: a.scanStatus,
  replicationStatus: a.replicationStatus,
  moderationStatus: a.moderationStatus,
  quarantineStatus: a.quarantineStatus,
  currentVersion: a.currentVersion,
  url: publicUrl(a, cdnUrl),
  createdAt: a.createdAt,
  updatedAt: a.updatedAt,
  revision: a.revision,
});

@ObjectType('AssetList')
export class AssetListType {
  @Field(() => [AssetType]) assets!: AssetType[];
  @Field(() => Int) total!: number;
  @Field(() => String, { description: 'Empty at the end.' }) nextCursor!: string;
}

@ObjectType('AssetVersion')
export class AssetVersionType {
  @Field(() => ID, { description: 'The version number, as used in delivery addresses.' }) id!: string;
  @Field(() => Int) number!: number;
  @Field(() => Float) size!: number;
  @Field(() => String) checksum!: string;
  @Field(() => String) mimeType!: string;
  @Field(() => String) originalName!: string;
  @Field(() => String) branch!: string;
  @Field(() => Boolean) current!: boolean;
  @Field(() => Date) createdAt!: Date;
}

export const toVersion = (v: AssetVersion, current: number): AssetVersionType => ({
  id: String(v.number),
  number: v.number,
  size: v.size,
  checksum: v.sha256,
  mimeType: v.mimeType,
  originalName: v.originalName,
  branch: v.branch,
  current: v.number === current,
  createdAt: v.createdAt,
});

@ObjectType('AssetBranch')
export class AssetBranchType {
  @Field(() => String) name!: string;
  @Field(() => Int) version!: number;
  @Field(() => Date) createdAt!: Date;
}

@ObjectType('AssetVersionHistory')
export class AssetVersionHistoryType {
  @Field(() => ID) assetId!: string;
  @Field(() => Int) currentVersion!: number;
  @Field(() => [AssetVersionType]) versions!: AssetVersionType[];
  @Field(() => [AssetBranchType]) branches!: AssetBranchType[];
}

@ObjectType('AssetReplicationPolicy')
export class ReplicationPolicyType {
  @Field(() => [String]) regions!: string[];
}

@ObjectType('AssetBucket')
export class BucketType {
  @Field(() => ID) id!: string;
  @Field(() => String) name!: string;
  @Field(() => String) defaultVisibility!: string;
  @Field(() => String) cacheControl!: string;
  @Field(() => Boolean) versioning!: boolean;
  @Field(() => Int, { nullable: true }) retentionDays!: number | null;
  @Field(() => Float, { nullable: true }) maxBytes!: number | null;
  @Field(() => [String], { nullable: true }) allowedMimeTypes!: string[] | null;
  @Field(() => [String]) allowedOrigins!: string[];
  @Field(() => String) homeRegion!: string;
  @Field(() => ReplicationPolicyType) replicationPolicy!: ReplicationPolicyType;
  @Field(() => GraphQLJSON, { nullable: true }) lifecyclePolicy!: unknown;
  @Field(() => String, { nullable: true }) domain!: string | null;
  @Field(() => Int) revision!: number;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
}

export const toBucket = (b: BucketDoc): BucketType => ({
  id: b._id,
  name: b.name,
  defaultVisibility: b.defaultVisibility,
  cacheControl: b.cacheControl,
  versioning: b.versioning,
  retentionDays: b.retentionDays ?? null,
  maxBytes: b.maxBytes ?? null,
  allowedMimeTypes: b.allowedMimeTypes && b.allowedMimeTypes.length > 0 ? b.allowedMimeTypes : null,
  allowedOrigins: b.allowedOrigins ?? [],
  homeRegion: b.homeRegion,
  replicationPolicy: { regions: b.replicationPolicy?.regions ?? [] },
  lifecyclePolicy: b.lifecyclePolicy ?? null,
  domain: b.domain ?? null,
  revision: b.revision,
  createdAt: b.createdAt,
  updatedAt: b.updatedAt,
});

@InputType('AssetReplicationPolicyInput')
export class ReplicationPolicyInput {
  @Field(() => [String]) regions!: string[];
}

@InputType('AssetBucketInput')
export class BucketInputType {
  @Field(() => String, { nullable: true }) name?: string;
  @Field(() => String, { nullable: true }) defaultVisibility?: 'public' | 'private';
  @Field(() => String, { nullable: true }) cacheControl?: string;
  @Field(() => Boolean, { nullable: true }) versioning?: boolean;
  @Field(() => Int, { nullable: true }) retentionDays?: number | null;
  @Field(() => Float, { nullable: true }) maxBytes?: number | null;
  @Field(() => [String], { nullable: true }) allowedMimeTypes?: string[] | null;
  @Field(() => [String], { nullable: true }) allowedOrigins?: string[];
  @Field(() => String, { nullable: true }) homeRegion?: string;
  @Field(() => ReplicationPolicyInput, { nullable: true }) replicationPolicy?: ReplicationPolicyInput;
  @Field(() => GraphQLJSON, { nullable: true }) lifecyclePolicy?: Record<string, unknown> | null;
  @Field(() => String, { nullable: true }) domain?: string | null;
}

@ObjectType('AssetContentPolicy')
export class ContentPolicyType {
  @Field(() => [String], { nullable: true }) allowedMimeTypes!: string[] | null;
  @Field(() => Float) maxImageBytes!: number;
  @Field(() => Float) maxVideoBytes!: number;
  @Field(() => Float) maxOtherBytes!: number;
  @Field(() => Boolean) requireScan!: boolean;
}

@InputType('AssetContentPolicyInput')
export class ContentPolicyInput {
  @Field(() => [String], { nullable: true }) allowedMimeTypes?: string[] | null;
  @Field(() => Float, { nullable: true }) maxImageBytes?: number;
  @Field(() => Float, { nullable: true }) maxVideoBytes?: number;
  @Field(() => Float, { nullable: true }) maxOtherBytes?: number;
  @Field(() => Boolean, { nullable: true }) requireScan?: boolean;
}

@InputType('AssetPatchInput')
export class AssetPatchInput {
  @Field(() => ID, { nullable: true }) bucket?: string;
  @Field(() => String, { nullable: true }) key?: string;
  @Field(() => String, { nullable: true }) originalName?: string;
  @Field(() => String, { nullable: true }) cacheControl?: string;
  @Field(() => String, { nullable: true }) visibility?: 'public' | 'private';
}

@InputType('AssetListFilter')
export class AssetListFilterInput {
  @Field(() => String, { nullable: true }) bucket?: string;
  @Field(() => String, { nullable: true }) prefix?: string;
  @Field(() => String, { nullable: true }) visibility?: string;
  @Field(() => String, { nullable: true }) query?: string;
  @Field(() => String, { nullable: true }) tag?: string;
  @Field(() => String, { nullable: true }) mimeType?: string;
  @Field(() => String, { nullable: true }) type?: string;
  @Field(() => String, { nullable: true }) folder?: string;
  @Field(() => String, { nullable: true }) checksum?: string;
  @Field(() => String, { nullable: true }) status?: string;
  @Field(() => String, { nullable: true }) scanStatus?: string;
  @Field(() => String, { nullable: true }) replicationStatus?: string;
  @Field(() => String, { nullable: true }) moderationStatus?: string;
  @Field(() => String, { nullable: true }) quarantineStatus?: string;
}

@ObjectType('AssetJob', {
  description:
    'An asynchronous job (spec 2.3: `job_id`, `status`, `status_url`). Every job the Assets area hands out is read at `/jobs/{jobID}`: delete, bulk, AI (actions, text extraction, generation), migration and workflow-run jobs; the field named by `kind` carries the details.',
})
export class AssetJobType {
  @Field(() => ID) jobId!: string;
  @Field(() => String, { description: '`delete`, `bulk`, `ai`, `migration` or `workflow_run`' }) kind!: string;
  @Field(() => String, {
    description:
      "The kind's own statuses: `queued`, `running`, `succeeded`, `failed` or `cancelled` (a workflow run also `waiting_approval`)",
  })
  status!: string;
  @Field(() => String, { description: '`{base_url}/api/v1/assets/jobs/{jobID}`' }) statusUrl!: string;
  @Field(() => String, { description: "The kind's own route (for a delete job the same as `statusUrl`)." }) detailUrl!: string;
  @Field(() => String, { description: '`delete`, `bulk`, the AI action, `migration` or `workflow_run`' }) type!: string;
  @Field(() => ID, { nullable: true, description: 'The asset the job is about, when there is one.' }) assetId!: string | null;
  @Field(() => String, { nullable: true }) error!: string | null;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date, { nullable: true }) finishedAt!: Date | null;
  /** The kind's record, for the kind's field resolvers (jobs/resolvers.ts); not a GraphQL field. */
  source?: { kind: string; doc: unknown };
}

export const jobStatusUrl = (baseUrl: string, id: string) => `${baseUrl}/api/v1/assets/jobs/${id}`;

export const toJob = (j: JobDoc, baseUrl: string): AssetJobType => ({
  jobId: j._id,
  kind: 'delete',
  status: j.status,
  statusUrl: jobStatusUrl(baseUrl, j._id),
  detailUrl: jobStatusUrl(baseUrl, j._id),
  type: j.type,
  assetId: j.assetId,
  error: j.error ?? null,
  createdAt: j.createdAt,
  finishedAt: j.finishedAt ?? null,
});

@ObjectType('AssetSignedUrl')
export class SignedUrlType {
  @Field(() => String) url!: string;
  @Field(() => Date) expiresAt!: Date;
  @Field(() => Int, { nullable: true }) maxDownloads!: number | null;
}

@ObjectType('AssetPurge')
export class PurgeType {
  @Field(() => ID) assetId!: string;
  @Field(() => String, { description: '`completed`: the local CDN keeps no cached copies.' }) status!: string;
  @Field(() => Date) requestedAt!: Date;
}

@ObjectType('AssetUploadPart')
export class UploadPartType {
  @Field(() => Int) number!: number;
  @Field(() => Float) size!: number;
  @Field(() => String) checksum!: string;
  @Field(() => Date) receivedAt!: Date;
}

@ObjectType('AssetUploadSession', { description: 'Spec 2.3 upload session.' })
export class UploadSessionType {
  @Field(() => ID) uploadSessionId!: string;
  @Field(() => ID, { nullable: true, description: 'Chunked sessions only.' }) sessionId!: string | null;
  @Field(() => String, { description: 'Signed PUT address; chunked parts go to `{url}/parts/{n}`.' }) url!: string;
  @Field(() => String) mode!: string;
  @Field(() => String, { description: '`open`, `completed`, `cancelled` or `expired`' }) status!: string;
  @Field(() => String) fileName!: string;
  @Field(() => Float) fileSize!: number;
  @Field(() => Float) maxBytes!: number;
  @Field(() => Float) partSize!: number;
  @Field(() => Int) partCount!: number;
  @Field(() => [UploadPartType]) parts!: UploadPartType[];
  @Field(() => ID, { nullable: true }) assetId!: string | null;
  @Field(() => Date) expiresAt!: Date;
  @Field(() => Date) createdAt!: Date;
}

export const toSession = (s: SessionDoc, url: string): UploadSessionType => ({
  uploadSessionId: s._id,
  sessionId: s.mode === 'chunked' ? s._id : null,
  url,
  mode: s.mode,
  status: s.status,
  fileName: s.fileName,
  fileSize: s.fileSize,
  maxBytes: s.fileSize,
  partSize: s.partSize,
  partCount: partCount(s),
  parts: [...(s.parts ?? [])]
    .sort((a, b) => a.number - b.number)
    .map((p) => ({ number: p.number, size: p.size, checksum: p.sha256, receivedAt: p.receivedAt })),
  assetId: s.assetId ?? null,
  expiresAt: s.expiresAt,
  createdAt: s.createdAt,
});

@InputType('AssetUploadSessionInput')
export class UploadSessionInput {
  @Field(() => String, { nullable: true }) mode?: string;
  @Field(() => String) fileName!: string;
  @Field(() => Float) fileSize!: number;
  @Field(() => String, { nullable: true }) mimeType?: string;
  @Field(() => String, { nullable: true }) checksumSha256?: string;
  @Field(() => Float, { nullable: true }) partSize?: number;
  @Field(() => String, { nullable: true }) bucket?: string;
  @Field(() => String, { nullable: true }) key?: string;
  @Field(() => String, { nullable: true }) folder?: string;
  @Field(() => String, { nullable: true }) visibility?: string;
  @Field(() => String, { nullable: true }) cacheControl?: string;
  @Field(() => GraphQLJSONObject, { nullable: true }) metadata?: Record<string, unknown>;
}

@ObjectType('AssetUploadCapability')
export class UploadCapabilityType {
  @Field(() => String, { description: 'Send as X-Upload-Capability to `upload_url`.' }) token!: string;
  @Field(() => Date) expiresAt!: Date;
  @Field(() => String) uploadUrl!: string;
}
