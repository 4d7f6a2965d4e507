import type { Readable } from 'node:stream';
import type { AgentRelease, ReleaseDelivery } from '../dataplane/agent/wire';
import type { AccessEntry, ReleaseHostOptions } from '../dataplane/releases';

/**
 * What the platform answers a node's agent about a release of a task it holds (the agent API:
 * nodes/agent-api.ts; docs/decisions/0365-agent-fetches-extras-and-releases.md): how it runs (its
 * environment's secrets opened from their sealed record), its bundle's bytes, whether it is still
 * wanted. The area that owns releases gives it; neither the environment nor the bundle goes into a
 * task record.
 */
export interface ReleaseDeliveries {
  describe(releaseId: string): Promise<ReleaseDelivery>;
  /** The bundle's bytes (the artifact: a tar archive) and their length when known. */
  bundle(releaseId: string): Promise<{ stream: Readable; bytes: number | null }>;
  /** Whether the platform still wants the release where the reconcile task named it. */
  stillWanted(release: AgentRelease): Promise<boolean>;
  /**
   * What an agent's release host observed (an agent with no sinks of its own: one outside this
   * process): requests served (analytics) and releases past the degraded rule.
   */
  observed(o: { access: AccessEntry[]; degraded: Array<{ releaseId: string; requests: number; errors: number }> }): Promise<void>;
}

/**
 * Commerce releases on the hosted node (docs/decisions/0325-nodes-module.md): what the area that owns
 * them gives through the `hostedReleases` kernel port. The agent API answers nodes' agents from it;
 * the hosted node's in-process agent runs the release host on its own data plane with `host` (where
 * releases live, the health gate's time, where the requests it observed and the degraded rule's
 * verdicts go) and reads each release through the agent API as any agent does.
 */
export interface HostedReleases extends ReleaseDeliveries {
  host: Omit<ReleaseHostOptions, 'supervisor' | 'edge' | 'drivers'>;
}

declare module '../core/ports' {
  interface KernelPorts {
    /** Provided by the commerce area; read by the agent API and the hosted node's agent (nodes/hosted.ts). */
    hostedReleases: HostedReleases;
  }
}
