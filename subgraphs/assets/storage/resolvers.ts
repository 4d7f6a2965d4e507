import { GraphQLJSONObject } from 'graphql-scalars';
import { Arg, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../../core/subgraph-kit';
import type { AssetsService, SortKey } from './service';
import {
  AssetJobType,
  AssetListFilterInput,
  AssetListType,
  AssetPatchInput,
  AssetType,
  AssetVersionHistoryType,
  BucketInputType,
  BucketType,
  ContentPolicyInput,
  ContentPolicyType,
  PurgeType,
  SignedUrlType,
  toAsset,
  toBucket,
  toJob,
  toVersion,
  toSession,
  UploadSessionInput,
  UploadSessionType,
  UploadCapabilityType,
} from './types';

/** Thin resolvers: the caller from the context, one service call, the result shaped. */
@Resolver()
export class AssetsResolver {
  constructor(private readonly svc: AssetsService) {}

  @Query(() => AssetListType)
  async assets(
    @Ctx() ctx: RequestContext,
    @Arg('filter', () => AssetListFilterInput, { nullable: true }) filter?: AssetListFilterInput,
    @Arg('sort', () => String, { nullable: true }) sort?: string,
    @Arg('direction', () => String, { nullable: true }) direction?: string,
    @Arg('cursor', () => String, { nullable: true }) cursor?: string,
    @Arg('limit', () => Int, { nullable: true }) limit?: number,
  ): Promise<AssetListType> {
    const r = await this.svc.list(ctx.principal, {
      filter: { ...(filter ?? {}) },
      sort: (sort ?? undefined) as SortKey | undefined,
      direction: (direction ?? undefined) as 'asc' | 'desc' | undefined,
      cursor: cursor || undefined,
      limit: limit ?? undefined,
    });
    return { assets: r.assets.map((a) => toAsset(a, this.svc.cfg.cdnUrl)), total: r.total, nextCursor: r.nextCursor };
  }

  @Query(() => AssetType)
  async asset(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<AssetType> {
    return toAsset(await this.svc.get(ctx.principal, id), this.svc.cfg.cdnUrl);
  }

  @Query(() => AssetVersionHistoryType)
  async assetVersions(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<AssetVersionHistoryType> {
    const { asset, versions } = await this.svc.versions(ctx.principal, id);
    return {
      assetId: asset._id,
      currentVersion: asset.currentVersion,
      versions: versions.map((v) => toVersion(v, asset.currentVersion)),
      branches: asset.branches ?? [],
    };
  }

  @Query(() => [BucketType])
  async assetBuckets(@Ctx() ctx: RequestContext): Promise<BucketType[]> {
    return (await this.svc.listBuckets(ctx.principal)).map(toBucket);
  }

  @Query(() => ContentPolicyType)
  async assetContentPolicy(@Ctx() ctx: RequestContext): Promise<ContentPolicyType> {
    return this.svc.getPolicy(ctx.principal);
  }

  @Mutation(() => BucketType)
  async createAssetBucket(
    @Arg('input', () => BucketInputType) input: BucketInputType,
    @Ctx() ctx: RequestContext,
  ): Promise<BucketType> {
    return toBucket(await this.svc.createBucket(ctx.principal, { ...input }));
  }

  @Mutation(() => BucketType)
  async updateAssetBucket(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => BucketInputType) input: BucketInputType,
    @Ctx() ctx: RequestContext,
    @Arg('ifMatch', () => String, { nullable: true }) ifMatch?: string,
  ): Promise<BucketType> {
    return toBucket(await this.svc.updateBucket(ctx.principal, id, ifMatch, { ...input }));
  }

  @Mutation(() => BucketType)
  async deleteAssetBucket(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: RequestContext,
    @Arg('ifMatch', () => String, { nullable: true }) ifMatch?: string,
  ): Promise<BucketType> {
    return toBucket(await this.svc.deleteBucket(ctx.principal, id, ifMatch));
  }

  @Mutation(() => ContentPolicyType)
  async putAssetContentPolicy(
    @Arg('input', () => ContentPolicyInput) input: ContentPolicyInput,
    @Ctx() ctx: RequestContext,
  ): Promise<ContentPolicyType> {
    return this.svc.putPolicy(ctx.principal, { ...input });
  }

  @Mutation(() => AssetType)
  async patchAsset(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => AssetPatchInput) input: AssetPatchInput,
    @Ctx() ctx: RequestContext,
    @Arg('ifMatch', () => String, { nullable: true }) ifMatch?: string,
  ): Promise<AssetType> {
    return toAsset(await this.svc.patch(ctx.principal, id, ifMatch, { ...input }), this.svc.cfg.cdnUrl);
  }

  @Mutation(() => AssetType)
  async setAssetTags(
    @Arg('id', () => ID) id: string,
    @Arg('tags', () => [String]) tags: string[],
    @Ctx() ctx: RequestContext,
    @Arg('ifMatch', () => String, { nullable: true }) ifMatch?: string,
  ): Promise<AssetType> {
    return toAsset(await this.svc.setTags(ctx.principal, id, ifMatch, tags), this.svc.cfg.cdnUrl);
  }

  @Mutation(() => AssetType)
  async mergeAssetMetadata(
    @Arg('id', () => ID) id: string,
    @Arg('metadata', () => GraphQLJSONObject) metadata: Record<string, unknown>,
    @Ctx() ctx: RequestContext,
    @Arg('ifMatch', () => String, { nullable: true }) ifMatch?: string,
  ): Promise<AssetType> {
    return toAsset(await this.svc.mergeMetadata(ctx.principal, id, ifMatch, metadata), this.svc.cfg.cdnUrl);
  }

  @Mutation(() => AssetJobType)
  async deleteAsset(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: RequestContext,
    @Arg('ifMatch', () => String, { nullable: true }) ifMatch?: string,
  ): Promise<AssetJobType> {
    return toJob(await this.svc.requestDelete(ctx.principal, id, ifMatch), this.svc.cfg.baseUrl);
  }

  @Mutation(() => PurgeType)
  async purgeAsset(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<PurgeType> {
    const a = await this.svc.purge(ctx.principal, id);
    return { assetId: a._id, status: 'completed', requestedAt: new Date() };
  }

  @Mutation(() => SignedUrlType)
  async createAssetSignedUrl(
    @Arg('id', () => ID) id: string,
    @Arg('expiresIn', () => Int) expiresIn: number,
    @Ctx() ctx: RequestContext,
    @Arg('maxDownloads', () => Int, { nullable: true }) maxDownloads?: number,
    @Arg('transformation', () => String, { nullable: true, description: 'A definition name: a signed `/tr/` address.' })
    transformation?: string,
  ): Promise<SignedUrlType> {
    const s = await this.svc.signedUrl(ctx.principal, id, expiresIn, maxDownloads, transformation);
    return { url: s.url, expiresAt: s.expiresAt, maxDownloads: s.maxDownloads };
  }

  @Mutation(() => AssetType)
  async restoreAssetVersion(
    @Arg('id', () => ID) id: string,
    @Arg('versionId', () => ID) versionId: string,
    @Ctx() ctx: RequestContext,
    @Arg('ifMatch', () => String, { nullable: true }) ifMatch?: string,
  ): Promise<AssetType> {
    return toAsset(await this.svc.restoreVersion(ctx.principal, id, versionId, ifMatch), this.svc.cfg.cdnUrl);
  }

  @Mutation(() => AssetType)
  async createAssetBranch(
    @Arg('id', () => ID) id: string,
    @Arg('name', () => String) name: string,
    @Ctx() ctx: RequestContext,
    @Arg('fromVersion', () => Int, { nullable: true }) fromVersion?: number,
  ): Promise<AssetType> {
    return toAsset(await this.svc.createBranch(ctx.principal, id, name, fromVersion), this.svc.cfg.cdnUrl);
  }

  @Mutation(() => AssetType)
  async promoteAssetBranch(
    @Arg('id', () => ID) id: string,
    @Arg('branch', () => String) branch: string,
    @Ctx() ctx: RequestContext,
    @Arg('ifMatch', () => String, { nullable: true }) ifMatch?: string,
  ): Promise<AssetType> {
    return toAsset(await this.svc.promoteBranch(ctx.principal, id, branch, ifMatch), this.svc.cfg.cdnUrl);
  }

  @Mutation(() => UploadSessionType)
  async createAssetUploadSession(
    @Arg('input', () => UploadSessionInput) input: UploadSessionInput,
    @Ctx() ctx: RequestContext,
    @Arg('idempotencyKey', () => String, { nullable: true }) idempotencyKey?: string,
  ): Promise<UploadSessionType> {
    const s = await this.svc.sessions.create(ctx.principal, { ...input }, idempotencyKey);
    return toSession(s, this.svc.sessions.uploadUrl(s._id));
  }

  @Query(() => UploadSessionType)
  async assetUploadSession(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<UploadSessionType> {
    const s = await this.svc.sessions.get(ctx.principal, id);
    return toSession(s, this.svc.sessions.uploadUrl(s._id));
  }

  @Mutation(() => AssetType)
  async completeAssetUploadSession(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<AssetType> {
    return toAsset(await this.svc.sessions.complete(ctx.principal, id), this.svc.cfg.cdnUrl);
  }

  @Mutation(() => UploadSessionType)
  async cancelAssetUploadSession(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<UploadSessionType> {
    const s = await this.svc.sessions.cancel(ctx.principal, id);
    return toSession(s, this.svc.sessions.uploadUrl(s._id));
  }

  @Mutation(() => UploadCapabilityType)
  async createAssetUploadCapability(
    @Ctx() ctx: RequestContext,
    @Arg('bucket', () => ID, { nullable: true }) bucket?: string,
    @Arg('folder', () => String, { nullable: true }) folder?: string,
    @Arg('expiresIn', () => Int, { nullable: true }) expiresIn?: number,
  ): Promise<UploadCapabilityType> {
    return this.svc.capabilities.issue(ctx.principal, { bucket, folder, expiresIn });
  }
}
