import { z } from 'zod';
import { type AnyRoute, route } from '../../../core/rest-route';
import { LIFECYCLE_ACTIONS } from './model';
import { SCOPES } from '../records';

const P = '/api/v1/assets';
const tag = 'Assets';

/** Spec 2.3 lifecycle rule; `age_days` up to 100 years (spec "not shown": docs/spec-decisions.md). */
const ruleBody = z
  .object({
    name: z.string().min(1).max(64),
    prefix: z.string().max(1024).nullable().optional(),
    action: z.enum(LIFECYCLE_ACTIONS),
    age_days: z.number().int().min(1).max(36_500),
    enabled: z.boolean().optional(),
  })
  .strict();

/** Spec 4.3 `/lifecycle-rules`, `/lifecycle-rules/{ruleID}`. */
export const lifecycleRoutes: AnyRoute[] = [
  route({
    method: 'POST',
    path: `${P}/lifecycle-rules`,
    summary: 'Create a lifecycle rule (run by the assets worker)',
    tag,
    operation: 'create-lifecycle-rule',
    body: ruleBody,
    scope: SCOPES.write,
    errors: [409],
    creates: { ruleID: '/data/id' },
    // The service enables a rule unless `enabled: false` is sent.
    derive: { body: 'input' },
    select: (d) => d.createAssetLifecycleRule,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/lifecycle-rules`,
    summary: 'List lifecycle rules',
    tag,
    operation: 'list-lifecycle-rules',
    scope: SCOPES.read,
    select: (d) => d.assetLifecycleRules,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'DELETE',
    path: `${P}/lifecycle-rules/{ruleID}`,
    summary: 'Delete a lifecycle rule',
    tag,
    operation: 'delete-lifecycle-rule',
    scope: SCOPES.write,
    errors: [404],
    derive: { params: 'id' },
    select: (d) => d.deleteAssetLifecycleRule,
    status: 200,
    envelope: 'standard',
  }),
];
