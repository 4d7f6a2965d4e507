import { type BuiltSubgraph, buildSubgraph } from '../../core/subgraph-kit';
import { ProjectSiteResolver, PublisherResolver } from './resolvers';
import type { PublisherService } from './service';
import { ProjectRef } from './types';

export { PublisherService } from './service';

/** The publisher subgraph: runtime catalog, sites and their operations; extends `Project`. */
export function buildPublisherSubgraph(publisher: PublisherService): Promise<BuiltSubgraph> {
  return buildSubgraph({
    name: 'publisher',
    resolvers: [PublisherResolver, ProjectSiteResolver],
    orphanedTypes: [ProjectRef],
    createResolver: (cls) => new cls(publisher),
    referenceResolvers: {
      Project: { __resolveReference: (ref: { id: string }) => ({ id: ref.id }) },
    },
  });
}
