import { z } from 'zod';
import { type AnyRoute, route } from '../../../core/rest-route';
import { AI_MODELS } from './evaluation';
import { AI_ACTIONS, IMAGE_ACTIONS, MAX_MONTHLY_CAP_MICROS } from './pricing';
import { revisionHeader } from '../revisions';
import { SCOPES } from '../records';

const P = '/api/v1/assets';
const tag = 'Assets';

const configBody = z
  .object({
    enabled_actions: z.array(z.enum(AI_ACTIONS)).max(AI_ACTIONS.length),
    monthly_spend_cap_micros: z.number().int().min(0).max(MAX_MONTHLY_CAP_MICROS),
    model: z.enum(AI_MODELS).optional(),
  })
  .strict();
const cropBody = z.object({ width: z.number().int().min(1).max(4096), height: z.number().int().min(1).max(4096) }).strict();

/** One 202 row per image action (spec 4.3 `/{assetID}/ai/analyze|moderation|smart-crop|background-remove`). */
const actionRoute = (action: (typeof IMAGE_ACTIONS)[number]): AnyRoute =>
  route({
    method: 'POST',
    path: `${P}/{assetID}/ai/${action}`,
    summary: `AI ${action} of an image: 202 with a durable job (409 not enabled, not evaluated or not a ready image; 402 spend cap)`,
    tag,
    operation: 'request-ai-action',
    ...(action === 'smart-crop' ? { body: cropBody } : {}),
    scope: SCOPES.process,
    errors: [402, 404, 409],
    creates: { aiJobID: '/data/job_id' },
    derive: { body: '.', params: '.', fixed: { action } },
    select: (d) => d.requestAssetAiAction,
    status: 202,
    envelope: 'standard',
  });

/** Spec 4.3 AI configuration, AI data of an asset, AI actions and their jobs. */
export const aiRoutes: AnyRoute[] = [
  route({
    method: 'GET',
    path: `${P}/ai/config`,
    summary:
      'AI configuration (enabled_actions, monthly_spend_cap_micros, model) with this month’s spend, prices and the model’s evaluation',
    tag,
    operation: 'get-ai-config',
    scope: SCOPES.read,
    select: (d) => d.assetAiConfig,
    status: 200,
    envelope: 'standard',
    headers: revisionHeader,
  }),
  route({
    method: 'PUT',
    path: `${P}/ai/config`,
    summary: 'Replace the AI configuration; needs If-Match with its revision (0 before the first write)',
    tag,
    operation: 'put-ai-config',
    body: configBody,
    scope: SCOPES.admin,
    errors: [412, 428],
    derive: { body: 'input', headers: ['If-Match'] },
    select: (d) => d.putAssetAiConfig,
    status: 200,
    envelope: 'standard',
    headers: revisionHeader,
  }),
  route({
    method: 'GET',
    path: `${P}/{assetID}/ai`,
    summary: 'AI data of an asset: the latest result of each action and its moderation status',
    tag,
    operation: 'get-asset-ai',
    scope: SCOPES.read,
    errors: [404],
    derive: { params: '.' },
    select: (d) => d.assetAiData,
    status: 200,
    envelope: 'standard',
  }),
  ...IMAGE_ACTIONS.map(actionRoute),
  route({
    method: 'GET',
    path: `${P}/ai/jobs/{aiJobID}`,
    summary: 'Poll an AI job (actions, text extractions, generations): status, result, output assets',
    tag,
    operation: 'get-ai-job',
    scope: SCOPES.read,
    errors: [404],
    derive: { params: 'id' },
    select: (d) => d.assetAiJob,
    status: 200,
    envelope: 'standard',
  }),
];
