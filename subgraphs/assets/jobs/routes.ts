import { type AnyRoute, route } from '../../../core/rest-route';
import { resultsQuery } from '../bulk';
import { P, SCOPES, tag } from '../records';

/**
 * `/jobs/{jobID}` answers any kind of job as its own route does (the kind's fields at the top, so
 * a client polling `status_url` reads `result`, `counts` or `steps` where it always did), plus the
 * common `kind`, `status_url` (this route) and `detail_url` (the kind's own route).
 */
const JOB_DETAILS = ['bulk', 'ai', 'migration', 'workflow_run'] as const;
function jobView(job: unknown): unknown {
  if (!job || typeof job !== 'object') return job;
  const common: Record<string, unknown> = { ...(job as Record<string, unknown>) };
  let detail: Record<string, unknown> = {};
  for (const k of JOB_DETAILS) {
    if (common[k] && typeof common[k] === 'object') detail = common[k] as Record<string, unknown>;
    delete common[k];
  }
  return { ...common, ...detail, status_url: common.status_url };
}

/** The job routes: every job id the area hands out (delete, bulk, AI, migration, workflow run; decision 0111). */
export const jobRoutes: AnyRoute[] = [
  route({
    method: 'GET',
    path: `${P}/jobs/{jobID}`,
    summary: 'Poll a job; a bulk job with one page of per-item results as at /bulk/{id} (`limit`, `cursor`)',
    tag,
    operation: 'get-job',
    query: resultsQuery,
    scope: SCOPES.read,
    derive: { query: '.', params: 'id' },
    select: (d) => jobView(d.assetJob),
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/jobs/{jobID}/cancel`,
    summary: 'Cancel a job where its kind allows (delete: while queued; migration; workflow run); 409 otherwise',
    tag,
    operation: 'cancel-job',
    scope: SCOPES.write,
    errors: [409],
    derive: { params: 'id' },
    select: (d) => jobView(d.cancelAssetJob),
    status: 200,
    envelope: 'standard',
  }),
];
