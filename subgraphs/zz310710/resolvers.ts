import { Args, Ctx, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../core/subgraph-kit';
import type { Zz310710Service } from './service';
import { Zz310710StatusArgs, Zz310710StatusType } from './types';

@Resolver()
export class Zz310710Resolver {
  constructor(private readonly zz310710: Zz310710Service) {}

  @Query(() => Zz310710StatusType, { description: 'The zz310710 area, as the caller sees it.' })
  zz310710Status(@Args() args: Zz310710StatusArgs, @Ctx() ctx: RequestContext): Zz310710StatusType {
    return this.zz310710.status(ctx.principal, args.note);
  }
}
