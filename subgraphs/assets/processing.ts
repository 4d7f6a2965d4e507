import type { AreaContext } from '../../core/area';
import { IdempotencyStore } from '../../core/idempotency';
import type { OperationExecutor } from '../../core/operations/engine';
import type { AnyRoute } from '../../core/rest-route';
import { AiConfigs } from './ai/config';
import { AI_OPERATION_TYPE, AiJobs } from './ai/jobs';
import { aiModels } from './ai/model';
import { AssetAiResolver } from './ai/resolvers';
import { aiRoutes } from './ai/routes';
import { AiSpend } from './ai/spend';
import { AssetGenerationsResolver } from './generations/resolvers';
import { generationRoutes } from './generations/routes';
import { Generations } from './generations/service';
import type { AssetsService } from './service';
import { TextExtractions } from './text/extractions';
import { OcrEngine } from './text/ocr';
import { AssetTextResolver } from './text/resolvers';
import { textRoutes } from './text/routes';
import { speechProvider } from './text/speech';
import { Transcripts } from './text/transcripts';
import { countAiCharge, usageModel } from './views/usage';

/**
 * AI actions, OCR, transcripts and generations (issue 16 items 3 and 4). index.ts wires them in
 * with one entry per hook of the area contract.
 */
export interface ProcessingServices {
  aiConfigs: AiConfigs;
  aiSpend: AiSpend;
  aiJobs: AiJobs;
  ocr: OcrEngine;
  textExtractions: TextExtractions;
  transcripts: Transcripts;
  generations: Generations;
}

export function processingServices(ctx: AreaContext<unknown>, assets: AssetsService): ProcessingServices {
  const m = aiModels(ctx.conn);
  const aiConfigs = new AiConfigs(m, assets);
  const aiSpend = new AiSpend(m);
  const ocr = new OcrEngine();
  const aiJobs = new AiJobs(m, assets, ctx.engine, ctx.ports, aiConfigs, aiSpend, ocr);
  const speech = speechProvider();
  const idempotency = new IdempotencyStore(ctx.conn, {
    conflict: 'assets.idempotency_conflict',
    inProgress: 'assets.idempotency_in_progress',
  });
  // Charged AI actions count in the Assets usage counters (`/analytics` ai.actions, ai.spend_micros).
  const Usage = usageModel(ctx.conn);
  aiJobs.onCharged = (c) => countAiCharge(Usage, c);
  // The local provider never transcribes; a real one would be available.
  const transcripts = new Transcripts(assets, m, aiConfigs, aiSpend, ctx.ports, speech, speech.name !== 'local');
  transcripts.onCharged = (c) => countAiCharge(Usage, c);
  return {
    aiConfigs,
    aiSpend,
    aiJobs,
    ocr,
    textExtractions: new TextExtractions(assets, aiJobs),
    transcripts,
    generations: new Generations(assets, aiJobs, idempotency),
  };
}

export const processingResolvers = [AssetAiResolver, AssetTextResolver, AssetGenerationsResolver];

export const processingRoutes: AnyRoute[] = [...aiRoutes, ...textRoutes, ...generationRoutes];

export const processingExecutors = (s: ProcessingServices): Record<string, OperationExecutor> => ({
  [AI_OPERATION_TYPE]: (ctx) => s.aiJobs.run(ctx),
});

/** Ends the OCR worker thread with the area. */
export const processingWorkers = (s: ProcessingServices) => [
  { name: 'assets-ocr', start: async () => undefined, stop: () => s.ocr.stop() },
];
