import type { NodeAgentService } from './agent-api';
import type { ConnectedNodes } from './registry';

/**
 * The hosted node as the publishing area describes it (the `hostedNode` kernel port;
 * docs/decisions/0380-hosted-agent-at-the-composition-root.md): its registry and agent API, and what
 * it runs. The area only describes; the composition root starts the node's agent from this where the
 * process runs the data plane and the area's workers (nodes/hosted.ts, app/platform.ts).
 */
export interface HostedNodeServices {
  nodes: ConnectedNodes;
  api: NodeAgentService;
  /** Whether hosted sites' steps are this node's tasks (the real executor): its reconcile is the data plane's `publisher` pass. */
  sites: boolean;
  /** `PUBLISHER_HOSTED_AGENT=external`: the hosted node's agent runs elsewhere. */
  external: boolean;
}

declare module '../core/ports' {
  interface KernelPorts {
    /** Provided by the publishing area; read by the composition root, which starts the hosted node's agent. */
    hostedNode: HostedNodeServices;
  }
}
