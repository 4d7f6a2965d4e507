import type { Connection, Model } from 'mongoose';
import type { BlobStore } from '../../core/blobs/blob-store';
import { PlatformError } from '../../core/errors';
import { encryptSecret } from '../../core/secrets';
import type { PublisherModels, SiteDoc } from './model';
import type { DesiredSite, SiteEvent, SiteExtrasValue } from '../../dataplane/agent/wire';
import { NodeAgentService } from '../../nodes/agent-api';
import type { ConnectedNodes } from '../../nodes/registry';
import type { ReleaseDeliveries } from '../../nodes/releases';
import { NodeTasks, nodeTaskModel } from '../../nodes/tasks';
import { NodeRoutedInfrastructure, type NodeRoutingDeps, nodeSiteSpec } from './node-tasks';
import { aad, type SiteCredentialsDoc } from './site-credentials';
import type { Infrastructure } from './simulated-infrastructure';

/**
 * Connected nodes in the publishing area (docs/decisions/0170-node-agent.md): the executor seam that
 * sends a node's steps to its agent, and the agent protocol's service. What `configure_site` on a
 * node returns (the admin access of the site) arrives sealed in the task record (node-tasks.ts,
 * `sealTaskResult`) and is kept here, sealed for the site, like the hosted pool's.
 */
export function connectedNodeServices(o: {
  conn: Connection;
  models: PublisherModels;
  nodes: ConnectedNodes;
  credentials: Model<SiteCredentialsDoc>;
  hosted: Infrastructure;
  waitMs: number;
  /** How long a finished node task is kept before the sweep deletes it (PUBLISHER_NODE_TASK_RETENTION_MS). */
  taskRetentionMs?: number;
  /** Whether an operation is under way (the sweep keeps its finished tasks until it ends). */
  operationRunning?: (operationId: string) => Promise<boolean>;
  /** Publishes a connected node's sleeps and wakes from its heartbeat (site-power.ts, `nodeSitePower`). */
  siteEvents?: (nodeId: string, events: SiteEvent[]) => Promise<void>;
  /** What a hosted site's process starts with beyond its spec (its mail settings and MySQL database). */
  hostedExtras?: (siteId: string) => Promise<SiteExtrasValue | undefined>;
  /** Commerce releases for the agents (the `hostedReleases` port), where that area runs. */
  releases?: () => ReleaseDeliveries | null;
  /** Where recovery points keep their bytes: the agents' part calls (docs/decisions/0375). */
  recoveryStore?: BlobStore;
  /** Hosted sites' machine steps go to the hosted node (docs/decisions/0225-hosted-pool-node.md). */
  hostedNode?: NodeRoutingDeps['hostedNode'] & {
    /** Whether an operation is under way on the site (its engine owns it; reconcile leaves it alone). */
    operationRunning: (operationId: string) => Promise<boolean>;
  };
}): { infra: NodeRoutedInfrastructure; agentApi: NodeAgentService } {
  const tasks = nodeTaskModel(o.conn);
  const onConfigured = async (site: SiteDoc, r: Record<string, unknown>) => {
    if (typeof r.admin_api_key !== 'string' || (await o.credentials.exists({ _id: site._id }))) return;
    await o.credentials.create({
      _id: site._id,
      accountId: site.accountId,
      ownerEmail: String(r.owner_email ?? ''),
      integrationId: String(r.integration_id ?? ''),
      adminApiKeyCiphertext: encryptSecret(r.admin_api_key, aad(site._id, 'admin_api_key')),
      ownerPasswordCiphertext: encryptSecret(String(r.owner_password ?? ''), aad(site._id, 'owner_password')),
      createdAt: new Date(),
    });
  };
  const infra = new NodeRoutedInfrastructure({
    models: o.models,
    tasks: new NodeTasks({ tasks, nodes: o.nodes, waitMs: o.waitMs }),
    hosted: o.hosted,
    waitMs: o.waitMs,
    onConfigured,
    configured: async (siteId) => Boolean(await o.credentials.exists({ _id: siteId })),
    onDeleted: async (siteId) => void (await o.credentials.deleteOne({ _id: siteId })),
    ...(o.hostedNode ? { hostedNode: { before: o.hostedNode.before, after: o.hostedNode.after, data: o.hostedNode.data } } : {}),
  });
  const running = o.hostedNode?.operationRunning;
  /** A customer's node's sites: those placed on it whose record says running or stopped. */
  const nodeSites = async (nodeId: string): Promise<DesiredSite[]> => {
    const sites = await o.models.Site.find({
      targetNodeId: nodeId,
      deploymentMode: 'connected_node',
      status: { $in: ['running', 'stopped'] },
    }).lean();
    return sites.flatMap((s) => {
      try {
        return [{ site: nodeSiteSpec(s), state: s.status as 'running' | 'stopped' }];
      } catch {
        return [];
      }
    });
  };
  /**
   * The hosted node's sites for its agent's reconcile: every hosted site whose record says running
   * or stopped, set up on the machine (its admin access is stored) and with no operation under way
   * (the engine resumes that one), as 0155's reconcile pass chose them.
   */
  const hostedSites = async (): Promise<DesiredSite[]> => {
    const sites = await o.models.Site.find({ deploymentMode: 'hosted', status: { $in: ['running', 'stopped'] } }).lean();
    const out: DesiredSite[] = [];
    for (const s of sites) {
      if (s.activeOperationId && running && (await running(s.activeOperationId))) continue;
      if (!(await o.credentials.exists({ _id: s._id }))) continue;
      try {
        out.push({ site: nodeSiteSpec(s), state: s.status as 'running' | 'stopped' });
      } catch {
        // A release no longer in the catalog: left as it is.
      }
    }
    return out;
  };
  /**
   * A node's sites' extras for its agent (docs/decisions/0365-agent-fetches-extras-and-releases.md),
   * for sites placed on that node only (the hosted node: hosted sites; a customer's node: those
   * targeted at it), the whole call refused when one is not. The hosted pool's come from the
   * platform's records; a customer's node's sites have none (SQLite, unconfigured).
   */
  const siteExtras = async (node: { id: string; hosted: boolean }, ids: string[]) => {
    const sites = await o.models.Site.find({ _id: { $in: ids } }, { deploymentMode: 1, targetNodeId: 1 }).lean();
    const placed = new Set(
      sites
        .filter((s) =>
          node.hosted ? s.deploymentMode === 'hosted' : s.deploymentMode === 'connected_node' && s.targetNodeId === node.id,
        )
        .map((s) => s._id),
    );
    const stray = ids.find((id) => !placed.has(id));
    if (stray !== undefined) throw new PlatformError('site_not_on_node', 404, `no site ${stray} on this node`);
    const extras = await Promise.all(
      ids.map(async (id) => (node.hosted ? ((await o.hostedExtras?.(id)) ?? {}) : {}) as SiteExtrasValue),
    );
    return Object.fromEntries(ids.map((id, i) => [id, extras[i]]));
  };
  return {
    infra,
    agentApi: new NodeAgentService({
      siteExtras,
      ...(o.releases ? { releases: o.releases } : {}),
      ...(o.recoveryStore ? { recoveryStore: o.recoveryStore } : {}),
      nodes: o.nodes,
      tasks,
      nodeSites,
      // Without the real executor the hosted node runs no site (commerce releases only).
      ...(o.hostedNode ? { hostedSites } : {}),
      taskRetentionMs: o.taskRetentionMs,
      operationRunning: o.operationRunning ?? running,
      siteEvents: o.siteEvents,
    }),
  };
}
