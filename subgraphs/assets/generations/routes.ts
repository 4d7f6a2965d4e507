import { z } from 'zod';
import { type AnyRoute, route } from '../../../core/rest-route';
import { GENERATION_MAX_EDGE, GENERATION_MAX_IMAGES, GENERATION_MIN_EDGE, GENERATION_PROMPT_MAX } from './service';
import { SCOPES } from '../records';

const edge = z.number().int().min(GENERATION_MIN_EDGE).max(GENERATION_MAX_EDGE);
const generationBody = z
  .object({
    prompt: z.string().min(1).max(GENERATION_PROMPT_MAX),
    width: edge.optional(),
    height: edge.optional(),
    count: z.number().int().min(1).max(GENERATION_MAX_IMAGES).optional(),
    bucket: z.string().min(1).max(64).optional(),
  })
  .strict();

/** Spec 4.3 `POST /generations`. */
export const generationRoutes: AnyRoute[] = [
  route({
    method: 'POST',
    path: '/api/v1/assets/generations',
    summary:
      'Generate private images (local provider: a gradient from the prompt); needs assets:generate and Idempotency-Key (428 without; 409 reused with another body); 202 job',
    tag: 'Assets',
    operation: 'create-generation',
    body: generationBody,
    scope: SCOPES.generate,
    errors: [402, 404, 409, 428],
    creates: { aiJobID: '/data/job_id' },
    derive: { body: '.', headers: ['Idempotency-Key'] },
    select: (d) => d.createAssetGeneration,
    status: 202,
    envelope: 'standard',
  }),
];
