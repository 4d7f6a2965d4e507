import { notFound } from '../../../core/errors';
import type { Principal } from '../../../core/principal';
import type { AiJobs, AiDataDoc, AiJobDoc } from '../ai';
import type { AssetsService } from '../storage';

export const extractionNotFound = () => notFound('assets.extraction_not_found', 'no text extraction for this asset');

/**
 * OCR extractions (spec 4.3 `/{id}/text-extraction`, `/text-extractions/{id}/retry`): an AI job of
 * action `text-extraction` (priced, enabled, capped and debited like every AI action); the asset's
 * latest extraction is remembered on its AI data document, so the read is two point reads.
 */
export class TextExtractions {
  constructor(
    private readonly assets: AssetsService,
    private readonly jobs: AiJobs,
  ) {}

  async request(p: Principal | null, assetId: string): Promise<AiJobDoc> {
    const job = await this.jobs.submit(p, { action: 'text-extraction', assetId });
    await this.jobs.m.Data.updateOne(
      { _id: assetId },
      { $set: { accountId: job.accountId, lastExtractionId: job._id, updatedAt: new Date() } },
      { upsert: true },
    );
    return job;
  }

  async latest(p: Principal | null, assetId: string): Promise<AiJobDoc> {
    const asset = await this.assets.get(p, assetId);
    const data = await this.jobs.m.Data.findById(assetId).lean<AiDataDoc>().exec();
    if (!data?.lastExtractionId || data.accountId !== asset.accountId) throw extractionNotFound();
    return this.jobs.get(p, data.lastExtractionId);
  }

  async retry(p: Principal | null, extractionId: string): Promise<AiJobDoc> {
    return this.jobs.retry(p, extractionId, 'text-extraction');
  }
}
