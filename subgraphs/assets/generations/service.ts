import type { IdempotencyStore } from '../../../core/idempotency';
import { newId } from '../../../core/ids';
import type { Principal } from '../../../core/principal';
import { PlatformError } from '../../../core/errors';
import type { AiJobs, AiJobDoc } from '../ai';
import type { AssetsService } from '../storage';
import { SCOPES } from '../records';

export const GENERATION_MAX_IMAGES = 4;
export const GENERATION_MIN_EDGE = 64;
export const GENERATION_MAX_EDGE = 2048;
export const GENERATION_PROMPT_MAX = 2000;

export interface GenerationInput {
  prompt: string;
  width?: number | null;
  height?: number | null;
  count?: number | null;
  bucket?: string | null;
}

export const idempotencyKeyRequired = () =>
  new PlatformError('assets.idempotency_key_required', 428, 'POST /generations needs an Idempotency-Key header');

/**
 * `POST /generations` (spec 4.3: scope `assets:generate`, `Idempotency-Key`, private images, a
 * job). The key goes through the kernel's idempotency store: the same key and body replay the
 * first answer (same job), another body is 409 `assets.idempotency_conflict`. The job id is
 * planned when the key is first claimed, so a retry after a crash resumes the same job.
 */
export class Generations {
  constructor(
    private readonly assets: AssetsService,
    private readonly jobs: AiJobs,
    private readonly idempotency: IdempotencyStore,
  ) {}

  async create(p: Principal | null, key: string | null | undefined, input: GenerationInput): Promise<AiJobDoc> {
    const principal = this.assets.writer(p, SCOPES.generate);
    if (!key) throw idempotencyKeyRequired();
    // An unknown bucket is refused now (404), not found later by the job.
    if (input.bucket) await this.assets.buckets.get(principal.accountId, input.bucket);
    const body = {
      prompt: input.prompt,
      width: input.width ?? 512,
      height: input.height ?? 512,
      count: input.count ?? 1,
      bucket: input.bucket ?? null,
    };
    const { value } = await this.idempotency.run(
      `assets.generations:${principal.accountId}`,
      key,
      body,
      async (attempt) => {
        await attempt.sideEffectsBegin();
        const job = await this.jobs.submit(p, {
          action: 'generation',
          assetId: null,
          input: body,
          units: body.count,
          jobId: attempt.plan.jobId,
        });
        return { jobId: job._id };
      },
      { plan: () => ({ jobId: newId() }) },
    );
    return this.jobs.get(p, value.jobId);
  }
}
