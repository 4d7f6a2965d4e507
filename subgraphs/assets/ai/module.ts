import { defineModule } from '../../../core/area-module';
import { OcrEngine } from './ocr';
import { AiConfigs } from './config';
import { AI_OPERATION_TYPE, AiJobs } from './jobs';
import { aiModels, type AiModels } from './model';
import { AssetAiResolver } from './resolvers';
import { aiRoutes } from './routes';
import { AiSpend } from './spend';
import type { CoreModuleServices } from '../storage';
import { countAiCharge, type UsageModuleServices } from '../usage';

export interface AiModuleServices {
  aiModels: AiModels;
  aiConfigs: AiConfigs;
  aiSpend: AiSpend;
  aiJobs: AiJobs;
  ocr: OcrEngine;
}

/** AI actions: configuration, spend, and the jobs that run them (OCR among them). */
export const aiModule = defineModule<AiModuleServices, CoreModuleServices & UsageModuleServices>({
  name: 'ai',
  services(ctx, { assets, usage }) {
    const m = aiModels(ctx.conn);
    const aiConfigs = new AiConfigs(m, assets);
    const aiSpend = new AiSpend(m);
    const ocr = new OcrEngine();
    // Charged AI actions count in the Assets usage counters (`/analytics` ai.actions, ai.spend_micros).
    const aiJobs = new AiJobs(m, assets, ctx.engine, ctx.ports, aiConfigs, aiSpend, ocr, (c) => countAiCharge(usage.Usage, c));
    return { aiModels: m, aiConfigs, aiSpend, aiJobs, ocr };
  },
  resolvers: [AssetAiResolver],
  routes: aiRoutes,
  executors: (s) => ({ [AI_OPERATION_TYPE]: (ctx) => s.aiJobs.run(ctx) }),
  // Ends the OCR worker thread with the area.
  workers: (s) => [{ name: 'assets-ocr', start: async () => undefined, stop: () => s.ocr.stop() }],
});
