import { z } from 'zod';
import { MAX_DOMAIN_INPUT_LENGTH, MAX_EMAIL_LENGTH } from '../../core/domain-names';
import { type AnyRoute, route } from '../../core/rest-route';
import {
  MAX_FROM_NAME_LENGTH,
  MAX_NODE_SELECTOR_TAGS,
  MAX_PROVIDER_API_KEY_LENGTH,
  MAX_REASON_LENGTH,
  MAX_REGION_LENGTH,
  MAX_SITE_NAME_LENGTH,
  SITE_ACTIONS,
} from './limits';
import { NODE_TAG } from '../../nodes/registry';
import { RUNTIME_VERSIONS } from './runtime-catalog';

const PREFIX = '/api/v1/publisher';
const tag = 'Publishing sites';
const str = z.string();

const siteFields = {
  // The service trims the name: one visible character at least.
  name: str.min(1).max(MAX_SITE_NAME_LENGTH).regex(/\S/),
  runtime_version: z.enum(RUNTIME_VERSIONS).optional(),
  mail_enabled: z.boolean().optional(),
};
// Two shapes (spec 4.1): a hosted site takes no node fields; a connected-node site names its node.
const createSiteBody = z.union([
  z.object({ ...siteFields, deployment_mode: z.literal('hosted').optional() }).strict(),
  z
    .object({
      ...siteFields,
      deployment_mode: z.literal('connected_node'),
      target_node_id: str.uuid(),
      placement_mode: z.literal('manual').optional(),
      node_selector_tags: z.array(str.regex(NODE_TAG)).max(MAX_NODE_SELECTOR_TAGS).optional(),
    })
    .strict(),
  // Without a target, the selector tags choose among the account's healthy nodes (docs/spec-decisions.md).
  z
    .object({
      ...siteFields,
      deployment_mode: z.literal('connected_node'),
      node_selector_tags: z.array(str.regex(NODE_TAG)).min(1).max(MAX_NODE_SELECTOR_TAGS),
    })
    .strict(),
]);

const actionBody = z.object({ action: z.enum(SITE_ACTIONS) }).strict();
const domainBody = z.object({ domain: str.min(1).max(MAX_DOMAIN_INPUT_LENGTH) }).strict();
const recoveryPointBody = z.object({ reason: str.max(MAX_REASON_LENGTH).optional() }).strict();
const stagingBody = z.object({ name: str.min(1).max(MAX_SITE_NAME_LENGTH).optional() }).strict();
const upgradeBody = z.object({ target_version: z.enum(RUNTIME_VERSIONS) }).strict();
const senderBody = z.object({ sender_email: str.min(1).max(MAX_EMAIL_LENGTH) }).strict();
const providerBody = z
  .object({
    domain: str.min(1).max(MAX_DOMAIN_INPUT_LENGTH),
    region: str.min(1).max(MAX_REGION_LENGTH),
    // Write-only; omitted on an update keeps the stored key.
    api_key: str.min(1).max(MAX_PROVIDER_API_KEY_LENGTH).optional(),
    from_email: str.min(1).max(MAX_EMAIL_LENGTH),
    from_name: str.max(MAX_FROM_NAME_LENGTH).nullable().optional(),
  })
  .strict();

const uuid = z.string().uuid();
const projectParams = z.object({ projectID: uuid });

const project = (suffix: string) => `${PREFIX}/projects/{projectID}${suffix}`;

/** Spec 4.1 — every publishing route, each onto one GraphQL operation. */
export const publisherRoutes: AnyRoute[] = [
  route({
    method: 'GET',
    path: `${PREFIX}/runtime-options`,
    summary: 'Tested runtime versions with images, digests, database requirements and upgrade predecessors',
    tag,
    operation: 'runtime-options',
    select: (d) => d.runtimeOptions,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${PREFIX}/sites`,
    summary: 'Create a site; returns the project, addresses and the provisioning operation',
    tag,
    operation: 'create-site',
    errors: [402, 409, 422],
    creates: { projectID: '/data/project/id', operationID: '/data/operation/id' },
    body: createSiteBody,
    derive: { body: 'input', headers: ['Idempotency-Key'] },
    select: (d) => d.createSite,
    status: 202,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: project('/metadata'),
    summary: 'Installation, project, managed database, active operation and mail flags',
    tag,
    params: projectParams,
    operation: 'site-metadata',
    derive: { params: '.' },
    select: (d) => d.siteMetadata,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: project('/operations/{operationID}'),
    summary: 'The full durable operation',
    tag,
    params: z.object({ projectID: uuid, operationID: uuid }),
    operation: 'site-operation',
    derive: { params: '.' },
    select: (d) => d.siteOperation,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: project('/actions'),
    summary: 'Lifecycle action: restart, start, stop, retry_provisioning or delete; returns the operation (202)',
    tag,
    params: projectParams,
    operation: 'site-action',
    errors: [409],
    creates: { operationID: '/data/operation/id' },
    body: actionBody,
    derive: { body: '.', params: '.' },
    select: (d) => ({ operation: d.siteAction }),
    status: 202,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: project('/history'),
    summary: 'Latest lifecycle operation (active_operation, latest_operation) and recovery points, newest first',
    tag,
    params: projectParams,
    operation: 'site-history',
    derive: { params: '.' },
    select: (d) => d.siteHistory,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: project('/domain'),
    summary: 'Attach a custom domain (a bare name; Unicode is stored as punycode); returns the domain record',
    tag,
    params: projectParams,
    operation: 'set-domain',
    errors: [409],
    body: domainBody,
    derive: { body: '.', params: '.' },
    select: (d) => d.setSiteDomain,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: project('/recovery-points'),
    summary: 'Recovery points, newest first',
    tag,
    params: projectParams,
    operation: 'recovery-points',
    derive: { params: '.' },
    select: (d) => d.recoveryPoints,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: project('/recovery-points'),
    summary: 'Take a recovery point; returns the point and its operation (202)',
    tag,
    params: projectParams,
    operation: 'create-recovery-point',
    errors: [409],
    creates: { recoveryPointID: '/data/recovery_point/id', operationID: '/data/operation/id' },
    body: recoveryPointBody,
    derive: { body: '.', params: '.' },
    select: (d) => d.createRecoveryPoint,
    status: 202,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: project('/recovery-points/{recoveryPointID}/restore'),
    summary: 'Restore a completed recovery point; returns the point and the restore operation (202)',
    tag,
    params: z.object({ projectID: uuid, recoveryPointID: uuid }),
    operation: 'restore-recovery-point',
    errors: [400, 409],
    creates: { operationID: '/data/operation/id' },
    derive: { params: '.' },
    select: (d) => d.restoreRecoveryPoint,
    status: 202,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: project('/staging'),
    summary: 'Staging copy from a fresh recovery point; returns the source point, the operation and the staging project (202)',
    tag,
    params: projectParams,
    operation: 'create-staging',
    errors: [402, 409],
    creates: { recoveryPointID: '/data/source_recovery_point/id', operationID: '/data/operation/id' },
    body: stagingBody,
    derive: { body: '.', params: '.' },
    select: (d) => d.createStagingSite,
    status: 202,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: project('/upgrades'),
    summary: 'Upgrade along a catalog edge; returns the pre-upgrade recovery point and the operation (202)',
    tag,
    params: projectParams,
    operation: 'upgrade-site',
    errors: [409],
    creates: { recoveryPointID: '/data/recovery_point/id', operationID: '/data/operation/id' },
    body: upgradeBody,
    derive: { body: '.', params: '.' },
    select: (d) => d.upgradeSite,
    status: 202,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: project('/mail/sender'),
    summary: 'Transactional and newsletter-provider status, without secrets',
    tag,
    params: projectParams,
    operation: 'mail-sender',
    derive: { params: '.' },
    select: (d) => d.siteMailSettings,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'PUT',
    path: project('/mail/sender'),
    summary: 'Set the transactional sender (a verified sender of the account)',
    tag,
    params: projectParams,
    operation: 'set-mail-sender',
    body: senderBody,
    derive: { body: '.', params: '.' },
    select: (d) => d.setMailSender,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: project('/mail/provider'),
    summary: 'Transactional and newsletter-provider status, without secrets',
    tag,
    params: projectParams,
    operation: 'mail-provider',
    derive: { params: '.' },
    select: (d) => d.siteMailSettings,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'PUT',
    path: project('/mail/provider'),
    summary: 'Configure the newsletter provider; api_key is write-only and stored encrypted',
    tag,
    params: projectParams,
    operation: 'set-mail-provider',
    body: providerBody,
    derive: { body: 'input', params: '.' },
    select: (d) => d.setNewsletterProvider,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'DELETE',
    path: project('/mail/provider'),
    summary: 'Remove the newsletter mapping and the encrypted provider configuration',
    tag,
    params: projectParams,
    operation: 'delete-mail-provider',
    derive: { params: '.' },
    select: (d) => d.deleteNewsletterProvider,
    status: 200,
    envelope: 'standard',
  }),
];
