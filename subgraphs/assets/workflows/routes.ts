import { z } from 'zod';
import { queryInt } from '../../../core/query-int';
import { type AnyRoute, route } from '../../../core/rest-route';
import { definitionSchema } from './catalog';
import { APPROVAL_STATUSES } from './model';
import { revisionHeader } from '../revisions';
import { SCOPES } from '../records';

/**
 * Spec 4.3 workflow and automation rows (decision 0027). The MCP transport and the public
 * workflow hook are raw HTTP (the area's data plane), not rows here.
 */
const P = '/api/v1/assets';
const tag = 'Assets workflows';
const pageQuery = z.object({ limit: queryInt(1, 100).optional(), cursor: z.string().min(1).optional() }).strict();
/** The service's own definition schema (trigger types, step ids, at most MAX_STEPS steps). */
const draftBody = definitionSchema;
const createBody = z
  .object({
    name: z.string().trim().min(1).max(200),
    project_id: z.string().uuid().nullable().optional(),
    draft: draftBody.optional(),
  })
  .strict();
const activateBody = z
  .object({
    version: z
      .number()
      .int()
      .positive()
      .max(2 ** 31 - 1)
      .optional(),
  })
  .strict()
  .optional();
const runBody = z
  .object({
    asset_id: z.string().min(1).max(64).optional(),
    version: z
      .number()
      .int()
      .positive()
      .max(2 ** 31 - 1)
      .optional(),
  })
  .strict()
  .optional();
const decisionBody = z
  .object({ action_hash: z.string().min(1).max(128).optional(), note: z.string().max(1000).optional() })
  .strict()
  .optional();
const approvalsQuery = pageQuery.extend({ status: z.enum(APPROVAL_STATUSES).optional() }).strict();

const decide = (decision: 'approved' | 'rejected', word: 'approve' | 'reject'): AnyRoute =>
  route({
    method: 'POST',
    path: `${P}/workflows/approvals/{approvalId}/${word}`,
    summary: `${word === 'approve' ? 'Approve' : 'Reject'} a pending action (a repeated identical decision is answered again)`,
    tag,
    operation: 'decide-approval',
    body: decisionBody,
    scope: SCOPES.write,
    errors: [409, 410, 503],
    derive: { body: '.', params: 'id', fixed: { decision } },
    select: (d) => d.decideAssetApproval,
    status: 200,
    envelope: 'standard',
  });

/** The route an approval's `decision_path` names: `{decision, action_hash?, note?}` (spec 2.7 words). */
const decisionRoute: AnyRoute = route({
  method: 'POST',
  path: `${P}/workflows/approvals/{approvalId}/decision`,
  summary: 'Decide a pending action: `approved`, or `rejected` (`denied` is the same); the path each approval names',
  tag,
  operation: 'decide-approval',
  body: z
    .object({
      decision: z.enum(['approved', 'rejected', 'denied']),
      action_hash: z.string().min(1).max(128).optional(),
      note: z.string().max(1000).optional(),
    })
    .strict(),
  scope: SCOPES.write,
  errors: [409, 410, 503],
  derive: { body: '.', params: 'id' },
  // `denied` is the spec's other word for `rejected`.
  variables: (r) => ({ decision: r.body.decision === 'denied' ? 'rejected' : r.body.decision }),
  select: (d) => d.decideAssetApproval,
  status: 200,
  envelope: 'standard',
});

export const workflowRoutes: AnyRoute[] = [
  route({
    method: 'GET',
    path: `${P}/workflows/catalog`,
    summary: 'Triggers and step types a workflow may use',
    tag,
    operation: 'workflow-catalog',
    scope: SCOPES.read,
    select: (d) => d.assetWorkflowCatalog,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/workflows`,
    summary: 'List workflows, newest first',
    tag,
    operation: 'list-workflows',
    query: pageQuery,
    scope: SCOPES.read,
    derive: { query: '.' },
    select: (d) => d.assetWorkflows,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/workflows`,
    summary: 'Create a workflow (optionally with a draft and the project whose activity shows its runs)',
    tag,
    operation: 'create-workflow',
    body: createBody,
    scope: SCOPES.write,
    // 404: project_id names no project of the account; 422: a config key the store cannot hold.
    errors: [404, 422],
    creates: { workflowId: '/data/id' },
    derive: { body: '.' },
    select: (d) => d.createAssetWorkflow,
    headers: revisionHeader,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/workflows/approvals`,
    summary: 'Approvals (workflow steps waiting for a person, governed tool calls), newest first',
    tag,
    operation: 'list-approvals',
    query: approvalsQuery,
    scope: SCOPES.read,
    derive: { query: '.' },
    select: (d) => d.assetApprovals,
    status: 200,
    envelope: 'standard',
  }),
  decisionRoute,
  decide('approved', 'approve'),
  decide('rejected', 'reject'),
  route({
    method: 'GET',
    path: `${P}/workflows/runs/{runId}`,
    summary: 'One run with its steps',
    tag,
    operation: 'get-workflow-run',
    scope: SCOPES.read,
    derive: { params: '.' },
    select: (d) => d.assetWorkflowRun,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/workflows/runs/{runId}/cancel`,
    summary: 'Cancel a run that has not finished',
    tag,
    operation: 'cancel-workflow-run',
    scope: SCOPES.write,
    errors: [409],
    derive: { params: '.' },
    select: (d) => d.cancelAssetWorkflowRun,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/workflows/runs/{runId}/retry`,
    summary: 'Run a failed or cancelled run again from the step it stopped at',
    tag,
    operation: 'retry-workflow-run',
    scope: SCOPES.write,
    errors: [409],
    derive: { params: '.' },
    select: (d) => d.retryAssetWorkflowRun,
    status: 202,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/workflows/{workflowId}`,
    summary: 'One workflow with its draft',
    tag,
    operation: 'get-workflow',
    scope: SCOPES.read,
    derive: { params: 'id' },
    select: (d) => d.assetWorkflow,
    headers: revisionHeader,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'PUT',
    path: `${P}/workflows/{workflowId}/draft`,
    summary: 'Save the draft; needs If-Match with the workflow revision',
    tag,
    operation: 'save-workflow-draft',
    body: draftBody,
    scope: SCOPES.write,
    // 422: a step config key the store cannot hold (a NUL byte).
    errors: [412, 422, 428],
    // The draft is passed whole, its step configs' keys as the caller wrote them.
    derive: { bodyAsSent: 'draft', params: 'id', headers: ['If-Match'] },
    select: (d) => d.saveAssetWorkflowDraft,
    headers: revisionHeader,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/workflows/{workflowId}/validate`,
    summary: 'Check the draft against the catalog',
    tag,
    operation: 'validate-workflow',
    scope: SCOPES.read,
    derive: { params: 'id' },
    select: (d) => d.validateAssetWorkflow,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/workflows/{workflowId}/publish`,
    summary: 'Freeze the draft as the next immutable version',
    tag,
    operation: 'publish-workflow',
    scope: SCOPES.write,
    derive: { params: 'id' },
    select: (d) => d.publishAssetWorkflow,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/workflows/{workflowId}/activate`,
    summary: 'Make a published version (default: the latest) the one runs use; a hook workflow gets its URL and secret',
    tag,
    operation: 'activate-workflow',
    body: activateBody,
    scope: SCOPES.write,
    errors: [409],
    derive: { body: '.', params: 'id' },
    select: (d) => d.activateAssetWorkflow,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/workflows/{workflowId}/run`,
    summary: 'Start a run of the active version (or `version`) on `asset_id`; a durable job',
    tag,
    operation: 'run-workflow',
    body: runBody,
    scope: SCOPES.write,
    errors: [409],
    derive: { body: '.', params: 'id' },
    select: (d) => d.runAssetWorkflow,
    status: 202,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/workflows/{workflowId}/versions`,
    summary: 'Published versions, newest first',
    tag,
    operation: 'workflow-versions',
    scope: SCOPES.read,
    derive: { params: 'id' },
    select: (d) => ({ items: d.assetWorkflowVersions, next_cursor: null }),
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/workflows/{workflowId}/runs`,
    summary: 'Runs of the workflow, newest first',
    tag,
    operation: 'workflow-runs',
    query: pageQuery,
    scope: SCOPES.read,
    derive: { query: '.', params: 'id' },
    select: (d) => d.assetWorkflowRuns,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/automation`,
    summary: 'Governed automation tools (with their scopes) and recent audits',
    tag,
    operation: 'automation',
    scope: SCOPES.read,
    select: (d) => d.assetAutomation,
    status: 200,
    envelope: 'standard',
  }),
];
