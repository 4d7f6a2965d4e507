import { Arg, Authorized, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../core/subgraph-kit';
import { IDENTITY_SCOPES } from '../../core/scopes';
import { forbidden } from '../../core/errors';
import { canWrite } from '../../core/principal';
import type { ProjectDoc } from './model';
import type { IdentityService } from './service';
import { Project, Viewer } from './types';

export const toProject = (p: ProjectDoc): Project => ({
  id: p._id,
  name: p.name,
  accountId: p.accountId,
  sourceType: p.sourceType,
  createdAt: p.createdAt,
});

@Resolver()
export class IdentityResolver {
  constructor(private readonly identity: IdentityService) {}

  @Authorized() // any valid key: the caller reads itself
  @Query(() => Viewer, { description: 'The caller: account, role and scopes of the bearer key.' })
  viewer(@Ctx() ctx: RequestContext): Viewer {
    const p = this.identity.requirePrincipal(ctx.principal);
    return { account: { id: p.accountId, slug: p.accountSlug, plan: p.plan }, role: p.role, scopes: p.scopes };
  }

  @Authorized(IDENTITY_SCOPES.read)
  @Query(() => Project)
  async project(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<Project> {
    return toProject(await this.identity.getProject(ctx.principal, id));
  }

  @Authorized(IDENTITY_SCOPES.read)
  @Query(() => [Project])
  async projects(@Ctx() ctx: RequestContext): Promise<Project[]> {
    return (await this.identity.listProjects(ctx.principal)).map(toProject);
  }

  @Authorized(IDENTITY_SCOPES.write)
  @Mutation(() => Project)
  async createProject(@Arg('name', () => String) name: string, @Ctx() ctx: RequestContext): Promise<Project> {
    const p = this.identity.requirePrincipal(ctx.principal);
    if (!canWrite(p)) throw forbidden('read_only', 'this key is read-only');
    return toProject(await this.identity.createProject(p.accountId, name));
  }
}
