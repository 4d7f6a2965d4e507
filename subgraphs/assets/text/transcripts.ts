import { conflict, notFound } from '../../../core/errors';
import type { Ports } from '../../../core/ports';
import type { Principal } from '../../../core/principal';
import { type SpeechToTextProvider, transcriptionUnavailable } from './speech';
import {
  type AiConfigs,
  type AiDataDoc,
  type AiModels,
  creditsOf,
  periodOf,
  PRICE_MICROS,
  type AiSpend,
  notProcessable,
} from '../ai';
import type { AiCharge } from '../usage';
import type { AssetsService } from '../storage';
import { SCOPES } from '../records';

export interface StoredTranscript {
  assetId: string;
  provider: string;
  text: string;
  language: string;
  segments: { start: number; end: number; text: string }[];
  createdAt: Date;
}

export const transcriptNotFound = () => notFound('assets.transcript_not_found', 'this asset has no transcript');

/**
 * Transcripts (spec 4.3 `/{id}/transcript`) through a speech-to-text provider. Admission is the
 * AI actions' (ready audio or video asset, action `transcript` enabled); a provider that cannot
 * transcribe (the local one) answers 422 `assets.transcription_unavailable` before anything is
 * spent. A provider that can is priced, capped and debited once per asset version.
 */
export class Transcripts {
  constructor(
    private readonly assets: AssetsService,
    private readonly m: AiModels,
    private readonly configs: AiConfigs,
    private readonly spend: AiSpend,
    private readonly ports: Ports,
    private readonly provider: SpeechToTextProvider,
    private readonly available: boolean,
    /** Called once per charged transcript (the usage counters, `views/usage.ts`). */
    private readonly onCharged?: (c: AiCharge) => Promise<void>,
  ) {}

  async request(p: Principal | null, assetId: string): Promise<StoredTranscript> {
    const { accountId } = this.assets.writer(p, SCOPES.process);
    const asset = await this.assets.get(p, assetId);
    if (asset.status !== 'ready') throw notProcessable(asset.status);
    if (asset.type !== 'audio' && asset.type !== 'video')
      throw conflict('assets.not_transcribable', `transcripts are made of audio or video; this asset is ${asset.type}`, {
        type: asset.type,
      });
    const config = await this.configs.of(accountId);
    if (!config.enabledActions.includes('transcript'))
      throw conflict('assets.ai_action_not_enabled', 'the AI action transcript is not enabled in /ai/config', {
        action: 'transcript',
      });
    if (!this.available) throw transcriptionUnavailable(this.provider.name);
    const version = asset.versions.find((v) => v.number === asset.currentVersion);
    const region = version ? await this.assets.locate(asset, version.sha256) : null;
    if (!version || !region) throw conflict('assets.source_unavailable', 'no copy of the asset bytes is available');
    const period = periodOf(new Date());
    const token = `transcript:${assetId}:${version.sha256}`;
    const price = PRICE_MICROS.transcript;
    await this.spend.reserve(accountId, period, token, price, config.monthlySpendCapMicros);
    try {
      const chunks: Buffer[] = [];
      for await (const c of this.assets.blobs.read(region, version.sha256)) chunks.push(c as Buffer);
      const t = await this.provider.transcribe(Buffer.concat(chunks), asset.mimeType);
      await this.ports.get('credits').recordUsage({
        accountId,
        product: 'assets',
        credits: creditsOf(price),
        source: 'assets.ai.transcript',
        description: `Assets transcript of ${assetId}`,
        idempotencyKey: `assets.ai:${token}`,
      });
      const stored: StoredTranscript = { assetId, provider: this.provider.name, ...t, createdAt: new Date() };
      const previous = await this.m.Data.findOneAndUpdate(
        { _id: assetId },
        { $set: { accountId, 'results.transcript': { jobId: token, at: stored.createdAt, result: stored, outputAssetIds: [] } } },
        { upsert: true, new: false },
      )
        .lean<AiDataDoc>()
        .exec();
      // The same request again (same bytes, same token, same debit) is not a second charge.
      if (previous?.results?.transcript?.jobId !== token)
        await this.onCharged?.({ accountId, priceMicros: price, at: stored.createdAt });
      return stored;
    } catch (e) {
      // Nothing was stored: the reservation goes back (a debit already made stays the same entry
      // under its key, so a retry of the request does not draw twice).
      await this.spend.release(accountId, period, token, price);
      throw e;
    }
  }

  async get(p: Principal | null, assetId: string): Promise<StoredTranscript> {
    const asset = await this.assets.get(p, assetId);
    const data = await this.m.Data.findById(assetId).lean<AiDataDoc>().exec();
    const t = data?.accountId === asset.accountId ? data.results?.transcript : undefined;
    if (!t) throw transcriptNotFound();
    return t.result as unknown as StoredTranscript;
  }
}
