import { type BuiltSubgraph, buildSubgraph, type RequestContext } from '../../core/subgraph-kit';
import { IdentityResolver, toProject } from './resolvers';
import type { IdentityService } from './service';

export { IdentityService } from './service';

/** The identity subgraph: accounts, keys, projects. Owns the `Project` entity. */
export function buildIdentitySubgraph(identity: IdentityService): Promise<BuiltSubgraph> {
  return buildSubgraph({
    name: 'identity',
    resolvers: [IdentityResolver],
    createResolver: (cls) => new cls(identity),
    referenceResolvers: {
      Project: {
        async __resolveReference(ref: { id: string }, ctx: RequestContext) {
          const project = await identity.findProject(ref.id);
          if (!project || !ctx.principal || project.accountId !== ctx.principal.accountId) return null;
          return toProject(project);
        },
      },
    },
  });
}
