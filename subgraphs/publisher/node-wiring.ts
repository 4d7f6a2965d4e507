import type { Connection, Model } from 'mongoose';
import { encryptSecret } from '../../core/secrets';
import type { PublisherModels, SiteDoc } from './model';
import { NodeAgentService } from './node-agent-api';
import { NodeRoutedInfrastructure, nodeTaskModel } from './node-tasks';
import type { ConnectedNodes } from './nodes';
import { type SiteCredentialsDoc, aad } from './real-infrastructure';
import type { Infrastructure } from './simulated-infrastructure';

/**
 * Connected nodes in the publishing area (docs/decisions/0170-node-agent.md): the executor seam that
 * sends a node's steps to its agent, and the agent protocol's service. What `configure_site` on a
 * node returns (the admin access of the site) is sealed here like the hosted pool's.
 */
export function connectedNodeServices(o: {
  conn: Connection;
  models: PublisherModels;
  nodes: ConnectedNodes;
  credentials: Model<SiteCredentialsDoc>;
  hosted: Infrastructure;
  waitMs: number;
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
    nodes: o.nodes,
    tasks,
    hosted: o.hosted,
    waitMs: o.waitMs,
    onConfigured,
    configured: async (siteId) => Boolean(await o.credentials.exists({ _id: siteId })),
  });
  return { infra, agentApi: new NodeAgentService({ nodes: o.nodes, tasks, models: o.models }) };
}
