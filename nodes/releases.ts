import type { ReleaseSource } from '../dataplane/agent/release-executor';
import type { ReleaseHostOptions } from '../dataplane/releases';

/**
 * Commerce releases on the hosted node (docs/decisions/0325-nodes-module.md): what the area that owns
 * them gives the hosted node's agent, through the `hostedReleases` kernel port. The agent runs the
 * release host on its own data plane with these options (where releases live, the health gate's
 * time, where the requests it observed and the degraded rule's verdicts go) and reads each
 * release's bundle and environment from the source, in process: neither goes into a task record.
 */
export interface HostedReleases extends ReleaseSource {
  host: Omit<ReleaseHostOptions, 'supervisor' | 'edge' | 'drivers'>;
}

declare module '../core/ports' {
  interface KernelPorts {
    /** Provided by the commerce area; read by the hosted node's agent (nodes/hosted.ts). */
    hostedReleases: HostedReleases;
  }
}
