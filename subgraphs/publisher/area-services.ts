import type { NodeAgentService } from '../../nodes/agent-api';
import type { HostedNodeServices } from '../../nodes/hosted-services';
import type { ConnectedNodes } from '../../nodes/registry';
import type { RealInfrastructure } from './real-infrastructure';
import type { PublisherService } from './service';
import type { Infrastructure, SimulatedInfrastructure } from './simulated-infrastructure';

/** The publishing area's services: the sites, connected nodes, the simulated infrastructure and the feature flag. */
export interface PublisherServices {
  sites: PublisherService;
  nodes: ConnectedNodes;
  /** Tests inject faults and change step delays here. */
  simulated: SimulatedInfrastructure;
  /** The executor in force (`PUBLISHER_EXECUTOR`): the simulated one above, or the real one. */
  infra: Infrastructure;
  /** Sites set up by the real executor: the operator's access to their admin (`platform sites admin-key`). */
  real: RealInfrastructure;
  /** The feature flag in force (tests flip it). */
  features: { publisherEnabled: boolean };
  /** What node agents may do over the bridge (`node-agent-api.ts`). */
  nodeAgent: NodeAgentService;
  /**
   * The hosted node (its registry, agent API, and what it runs), given as the `hostedNode` port: the
   * composition root starts its agent (docs/decisions/0380-hosted-agent-at-the-composition-root.md).
   */
  hostedNode: HostedNodeServices;
}
