import type { BackgroundWorker } from '../core/area';
import { isPlatformError } from '../core/errors';
import { NodeAgent } from '../dataplane/agent/agent';
import type { DataPlane } from '../dataplane/plane';
import { nodeAgentCall } from './agent-api';
import type { HostedNodeServices } from './hosted-services';
import type { HostedReleases } from './releases';

/** The hosted node as the publishing area describes it (the `hostedNode` port), and where its agent runs. */
export interface HostedNodeOptions extends HostedNodeServices {
  /** This process's data plane; null: no agent here. */
  plane: () => DataPlane | null;
  /** Commerce releases, when the area that owns them is in this process (the `hostedReleases` port). */
  releases?: () => HostedReleases | null;
  /** Where the agent keeps its files (`<DATA_DIR>/hosted-node`). */
  dataDir: string;
  log: (line: string) => void;
}

/**
 * The hosted pool as a node (docs/decisions/0225-hosted-pool-node.md). Where this process runs the
 * publishing area's workers and the data plane, the composition root (app/platform.ts; decision
 * 0380) starts from the area's `hostedNode` port the platform's own agent: the node
 * agent's code (dataplane/agent/agent.ts) with the real node executor on this process's data
 * plane, speaking the agent protocol to this process's publishing area directly (no HTTP, so no
 * rate limit and no port), for the hosted node's token. With the real executor hosted sites'
 * machine steps are node tasks of that node, and its reconcile is the data plane's `publisher` pass
 * (boot, every 30 s, and a kick when a site's hosts or mail change); commerce releases' steps are
 * its tasks whatever the executor (docs/decisions/0325-nodes-module.md). Every replica starts one;
 * one holds the node's lease and the others stand by (docs/decisions/0226-hosted-node-lease.md).
 *
 * `PUBLISHER_HOSTED_AGENT=external`: no agent here; hosted sites still go through the hosted node,
 * whose agent is run elsewhere (`PLATFORM_NODE_TOKEN=… platform nodes agent`, the token printed by
 * `platform nodes rotate-token --node hosted`); it runs commerce releases too, reading them through
 * the agent API as this one does (docs/decisions/0365-agent-fetches-extras-and-releases.md).
 *
 * The hosted node's token is random, its hash on the node's record like every node's, and sealed
 * there with the platform's key so every replica opens the same one (registry.ts, `ensureHosted`;
 * docs/decisions/0270-node-tokens-and-task-secrets.md). It stays in this process's memory and is
 * never on a command line; after a rotation the agent's next call is refused and the transport
 * opens the new one from the record.
 */
export function hostedNodeWorker(o: HostedNodeOptions): BackgroundWorker {
  let agent: NodeAgent | null = null;
  let unregister: (() => void) | undefined;
  return {
    name: 'publisher-hosted-node',
    async start() {
      const plane = o.plane();
      if (!plane) return;
      const first = await o.nodes.ensureHosted();
      if (o.external) return;
      const api = o.api;
      const authenticate = rotatingToken(
        first,
        (token) => api.authenticate(token),
        () => o.nodes.hostedToken(),
      );
      const source = o.releases?.();
      const a = new NodeAgent({
        apiUrl: 'in-process',
        token: first,
        dataDir: o.dataDir,
        edgePort: 0,
        plane,
        platformPlane: true,
        executor: 'real',
        // The hosted pool runs many sites: one site's slow start does not hold the others' steps.
        concurrency: 8,
        // A site's extras and a release's bundle and environment come through the agent API, as for
        // an external agent (decision 0365): only the release host's options are this process's.
        ...(source ? { releaseHost: source.host } : {}),
        transport: async (method, p, body, signal) => {
          let node;
          try {
            node = await authenticate();
          } catch (e) {
            if (!isPlatformError(e)) throw e;
            return { status: e.status, body: { success: false, error: { code: e.code, message: e.message } } };
          }
          const out = await nodeAgentCall(api, node, method, p, body, signal);
          // What crosses the protocol is JSON, as over HTTP, or a download's bytes.
          return {
            status: out.status,
            body: JSON.parse(JSON.stringify(out.body)) as unknown,
            ...(out.bytes ? { bytes: out.bytes.stream } : {}),
          };
        },
        log: o.log,
      });
      await a.start();
      agent = a;
      if (o.sites) unregister = plane.reconciler.register('publisher', () => a.reconcileNow());
    },
    async stop() {
      unregister?.();
      unregister = undefined;
      await agent?.stop();
      agent = null;
    },
  };
}

/**
 * Authentication with the hosted node's token that follows a rotation (`nodes rotate-token --node
 * hosted`): a refused call opens the token now on the record and tries once more with it. Each call
 * compares with the token it was refused with, not with the one held now, so calls refused together
 * (a heartbeat beside a claim) all retry: comparing with the one held now, every call but the first
 * to learn of the new token took its own refusal for a revoked node, and the agent stopped.
 */
export function rotatingToken<N>(
  first: string,
  authenticate: (token: string) => Promise<N>,
  current: () => Promise<string | null>,
): () => Promise<N> {
  let token = first;
  return async () => {
    const used = token;
    try {
      return await authenticate(used);
    } catch (e) {
      const now = isPlatformError(e) && e.status === 401 ? await current() : null;
      if (!now || now === used) throw e;
      token = now;
      return authenticate(now);
    }
  };
}
