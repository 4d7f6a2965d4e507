import { Arg, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../../core/subgraph-kit';
import type { Domains } from './domains';
import { DomainType, toDomain } from './types';
import type { AssetsService } from '../storage';

/** Thin resolvers of custom domains (the rules are in domains.ts). */
@Resolver()
export class AssetDomainsResolver {
  constructor(
    _svc: AssetsService,
    private readonly s: { domains: Domains },
  ) {}

  @Query(() => [DomainType])
  async assetDomains(@Ctx() ctx: RequestContext): Promise<DomainType[]> {
    return (await this.s.domains.list(ctx.principal)).map(toDomain);
  }

  @Mutation(() => DomainType)
  async createAssetDomain(
    @Arg('domain', () => String) domain: string,
    @Ctx() ctx: RequestContext,
    @Arg('bucket', () => ID, { nullable: true }) bucket?: string,
  ): Promise<DomainType> {
    return toDomain(await this.s.domains.create(ctx.principal, { domain, bucket }));
  }

  @Mutation(() => DomainType)
  async verifyAssetDomain(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<DomainType> {
    return toDomain(await this.s.domains.verify(ctx.principal, id));
  }

  @Mutation(() => DomainType)
  async deleteAssetDomain(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<DomainType> {
    return toDomain(await this.s.domains.remove(ctx.principal, id));
  }
}
