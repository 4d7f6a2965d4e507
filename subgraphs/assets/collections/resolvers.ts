import { Arg, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../../core/subgraph-kit';
import type { Organisation } from './service';
import {
  CollectionInput,
  CollectionPageType,
  CollectionType,
  DeletionType,
  SavedSearchInput,
  SavedSearchPageType,
  SavedSearchType,
  toCollection,
  toSavedSearch,
} from './types';
import { type AssetsService, AssetListType, toAsset } from '../storage';

/** Thin resolvers of collections and saved searches. */
@Resolver()
export class AssetOrganisationResolver {
  private readonly org: Organisation;
  constructor(
    private readonly assets: AssetsService,
    services?: { organisation: Organisation },
  ) {
    this.org = services?.organisation as Organisation;
  }

  @Query(() => CollectionPageType)
  async assetCollections(
    @Ctx() ctx: RequestContext,
    @Arg('limit', () => Int, { nullable: true }) limit?: number,
    @Arg('cursor', () => String, { nullable: true }) cursor?: string,
  ): Promise<CollectionPageType> {
    const r = await this.org.listCollections(ctx.principal, limit, cursor);
    return { items: r.items.map(toCollection), nextCursor: r.nextCursor };
  }

  @Query(() => CollectionType)
  async assetCollection(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<CollectionType> {
    return toCollection(await this.org.getCollection(ctx.principal, id));
  }

  @Mutation(() => CollectionType)
  async createAssetCollection(
    @Arg('input', () => CollectionInput) input: CollectionInput,
    @Ctx() ctx: RequestContext,
  ): Promise<CollectionType> {
    return toCollection(await this.org.createCollection(ctx.principal, { ...input, name: input.name ?? '' }));
  }

  @Mutation(() => CollectionType)
  async updateAssetCollection(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => CollectionInput) input: CollectionInput,
    @Ctx() ctx: RequestContext,
    @Arg('ifMatch', () => String, { nullable: true }) ifMatch?: string,
  ): Promise<CollectionType> {
    return toCollection(await this.org.updateCollection(ctx.principal, id, ifMatch, { ...input }));
  }

  @Mutation(() => DeletionType)
  async deleteAssetCollection(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: RequestContext,
    @Arg('ifMatch', () => String, { nullable: true }) ifMatch?: string,
  ): Promise<DeletionType> {
    return { id: (await this.org.deleteCollection(ctx.principal, id, ifMatch))._id, deleted: true };
  }

  @Query(() => SavedSearchPageType)
  async assetSavedSearches(
    @Ctx() ctx: RequestContext,
    @Arg('limit', () => Int, { nullable: true }) limit?: number,
    @Arg('cursor', () => String, { nullable: true }) cursor?: string,
  ): Promise<SavedSearchPageType> {
    const r = await this.org.listSavedSearches(ctx.principal, limit, cursor);
    return { items: r.items.map(toSavedSearch), nextCursor: r.nextCursor };
  }

  @Query(() => SavedSearchType)
  async assetSavedSearch(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<SavedSearchType> {
    return toSavedSearch(await this.org.getSavedSearch(ctx.principal, id));
  }

  @Query(() => AssetListType)
  async assetSavedSearchResults(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: RequestContext,
    @Arg('cursor', () => String, { nullable: true }) cursor?: string,
    @Arg('limit', () => Int, { nullable: true }) limit?: number,
  ): Promise<AssetListType> {
    const r = await this.org.runSavedSearch(ctx.principal, id, cursor, limit);
    return { assets: r.assets.map((a) => toAsset(a, this.assets.cfg.cdnUrl)), total: r.total, nextCursor: r.nextCursor };
  }

  @Mutation(() => SavedSearchType)
  async createAssetSavedSearch(
    @Arg('input', () => SavedSearchInput) input: SavedSearchInput,
    @Ctx() ctx: RequestContext,
  ): Promise<SavedSearchType> {
    return toSavedSearch(await this.org.createSavedSearch(ctx.principal, { name: input.name ?? '', filter: input.filter ?? {} }));
  }

  @Mutation(() => SavedSearchType)
  async updateAssetSavedSearch(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => SavedSearchInput) input: SavedSearchInput,
    @Ctx() ctx: RequestContext,
    @Arg('ifMatch', () => String, { nullable: true }) ifMatch?: string,
  ): Promise<SavedSearchType> {
    return toSavedSearch(await this.org.updateSavedSearch(ctx.principal, id, ifMatch, { ...input }));
  }

  @Mutation(() => DeletionType)
  async deleteAssetSavedSearch(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: RequestContext,
    @Arg('ifMatch', () => String, { nullable: true }) ifMatch?: string,
  ): Promise<DeletionType> {
    return { id: (await this.org.deleteSavedSearch(ctx.principal, id, ifMatch))._id, deleted: true };
  }
}
