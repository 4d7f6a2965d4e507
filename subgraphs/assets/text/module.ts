import { defineModule } from '../../../core/area-module';
import { TextExtractions } from './extractions';
import { AssetTextResolver } from './resolvers';
import { textRoutes } from './routes';
import { speechProvider } from './speech';
import { Transcripts } from './transcripts';
import type { AiModuleServices } from '../ai';
import type { CoreModuleServices } from '../storage';
import { countAiCharge, type UsageModuleServices } from '../usage';

export interface TextModuleServices {
  textExtractions: TextExtractions;
  transcripts: Transcripts;
}

/** Text of an asset: OCR extractions (an AI job) and transcripts of audio and video. */
export const textModule = defineModule<TextModuleServices, CoreModuleServices & UsageModuleServices & AiModuleServices>({
  name: 'text',
  services(ctx, { assets, usage, aiModels, aiConfigs, aiSpend, aiJobs }) {
    const speech = speechProvider();
    return {
      textExtractions: new TextExtractions(assets, aiJobs),
      // The local provider never transcribes; a real one would be available.
      transcripts: new Transcripts(assets, aiModels, aiConfigs, aiSpend, ctx.ports, speech, speech.name !== 'local', (c) =>
        countAiCharge(usage.Usage, c),
      ),
    };
  },
  resolvers: [AssetTextResolver],
  routes: textRoutes,
});
