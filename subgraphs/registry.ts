import type { BuiltSubgraph } from '../core/subgraph-kit';
import { buildIdentitySubgraph, type IdentityService } from './identity';
import { buildPublisherSubgraph, type PublisherService } from './publisher';

/** The services the subgraphs run on (built once per process by the composition root). */
export interface AreaServices {
  identity: IdentityService;
  publisher: PublisherService;
}

/** Every subgraph, in port order (SUBGRAPH_BASE_PORT + index). */
export const SUBGRAPHS = [
  { name: 'identity', build: (s: AreaServices) => buildIdentitySubgraph(s.identity) },
  { name: 'publisher', build: (s: AreaServices) => buildPublisherSubgraph(s.publisher) },
] as const;

export type SubgraphName = (typeof SUBGRAPHS)[number]['name'];

export function subgraphPort(name: string, basePort: number): number {
  const i = SUBGRAPHS.findIndex((s) => s.name === name);
  if (i < 0) throw new Error(`unknown subgraph "${name}"; known: ${SUBGRAPHS.map((s) => s.name).join(', ')}`);
  return basePort + i;
}

/** Builds every subgraph's schema without services: enough for SDL and composition. */
export async function buildSchemasOnly(): Promise<BuiltSubgraph[]> {
  const none = {} as AreaServices;
  return Promise.all(SUBGRAPHS.map((s) => s.build(none)));
}
