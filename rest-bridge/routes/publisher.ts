import { z } from 'zod';
import type { RouteDef } from '../route-table';

const PREFIX = '/api/v1/publisher';
const tag = 'Publishing sites';
const projectId = (r: { params: Record<string, string> }) => ({ projectId: r.params.projectID });
const str = z.string();

const createSiteBody = z
  .object({
    name: str.min(1).max(63),
    runtime_version: str.min(1).optional(),
    deployment_mode: z.enum(['hosted', 'connected_node']).optional(),
    target_node_id: str.uuid().optional(),
    placement_mode: str.optional(),
    node_selector_tags: z.array(str).max(20).optional(),
    mail_enabled: z.boolean().optional(),
  })
  .strict();

const actionBody = z.object({ action: str }).strict();

/** Spec 4.1 — every publishing route, each onto one GraphQL operation. */
export const publisherRoutes: RouteDef<any, any>[] = [
  {
    method: 'GET',
    path: `${PREFIX}/runtime-options`,
    summary: 'Tested runtime versions with images, digests, database requirements and upgrade predecessors',
    tag,
    operation: 'publisher/runtime-options',
    variables: () => ({}),
    select: (d) => d.runtimeOptions,
    status: 200,
    envelope: 'standard',
  },
  {
    method: 'POST',
    path: `${PREFIX}/sites`,
    summary: 'Create a site; returns the project, addresses and the provisioning operation',
    tag,
    operation: 'publisher/create-site',
    body: createSiteBody,
    variables: (r) => {
      const b = r.body as z.infer<typeof createSiteBody>;
      const key = r.headers['idempotency-key'];
      return {
        input: {
          name: b.name,
          runtimeVersion: b.runtime_version,
          deploymentMode: b.deployment_mode,
          targetNodeId: b.target_node_id,
          placementMode: b.placement_mode,
          nodeSelectorTags: b.node_selector_tags,
          mailEnabled: b.mail_enabled,
        },
        idempotencyKey: typeof key === 'string' && key ? key : null,
      };
    },
    select: (d) => d.createSite,
    status: 202,
    envelope: 'standard',
  },
  {
    method: 'GET',
    path: `${PREFIX}/projects/{projectID}/metadata`,
    summary: 'Installation, project, managed database, active operation and mail flags',
    tag,
    operation: 'publisher/site-metadata',
    variables: projectId,
    select: (d) => d.siteMetadata,
    status: 200,
    envelope: 'standard',
  },
  {
    method: 'GET',
    path: `${PREFIX}/projects/{projectID}/operations/{operationID}`,
    summary: 'The full durable operation',
    tag,
    operation: 'publisher/site-operation',
    variables: (r) => ({ projectId: r.params.projectID, operationId: r.params.operationID }),
    select: (d) => d.siteOperation,
    status: 200,
    envelope: 'standard',
  },
  {
    method: 'POST',
    path: `${PREFIX}/projects/{projectID}/actions`,
    summary: 'Lifecycle action: restart, start, stop or retry_provisioning; returns the operation (202)',
    tag,
    operation: 'publisher/site-action',
    body: actionBody,
    variables: (r) => ({ ...projectId(r), action: (r.body as z.infer<typeof actionBody>).action }),
    select: (d) => ({ operation: d.siteAction }),
    status: 202,
    envelope: 'standard',
  },
];
