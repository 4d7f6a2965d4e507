import { Arg, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../../core/subgraph-kit';
import type { Connections } from './connections';
import { ConnectionInputType, ConnectionType, toConnection } from './types';
import type { AssetsService } from '../storage';

/** Thin resolvers of connections (the rules are in connections.ts). */
@Resolver()
export class AssetConnectionsResolver {
  constructor(
    _svc: AssetsService,
    private readonly s: { connections: Connections },
  ) {}

  @Query(() => [ConnectionType])
  async assetConnections(@Ctx() ctx: RequestContext): Promise<ConnectionType[]> {
    return (await this.s.connections.list(ctx.principal)).map(toConnection);
  }

  @Query(() => ConnectionType)
  async assetConnection(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<ConnectionType> {
    return toConnection(await this.s.connections.get(ctx.principal, id));
  }

  @Mutation(() => ConnectionType)
  async createAssetConnection(
    @Arg('input', () => ConnectionInputType) input: ConnectionInputType,
    @Ctx() ctx: RequestContext,
  ): Promise<ConnectionType> {
    return toConnection(await this.s.connections.create(ctx.principal, input));
  }

  @Mutation(() => ConnectionType)
  async updateAssetConnection(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => ConnectionInputType) input: ConnectionInputType,
    @Ctx() ctx: RequestContext,
    @Arg('ifMatch', () => String, { nullable: true }) ifMatch?: string,
  ): Promise<ConnectionType> {
    return toConnection(await this.s.connections.update(ctx.principal, id, ifMatch, input));
  }

  @Mutation(() => ConnectionType)
  async deleteAssetConnection(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<ConnectionType> {
    return toConnection(await this.s.connections.remove(ctx.principal, id));
  }

  @Mutation(() => ConnectionType)
  async verifyAssetConnection(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<ConnectionType> {
    return toConnection(await this.s.connections.verify(ctx.principal, id));
  }
}
