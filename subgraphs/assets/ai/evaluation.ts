import sharp from 'sharp';
import { type AiProvider, LocalAiProvider } from './provider';

/**
 * The evaluation gate (spec 7.3: AI requests are refused while "the configured model has not
 * passed the evaluation gate"; decision 0026). A model passes when it has a provider in this build
 * and that provider answers every case of the fixed evaluation suite below correctly; the suite is
 * run in-process the first time the model is asked for (and its record kept for the process).
 * A model without a provider, or one that fails a case, is refused with 409
 * `assets.ai_model_not_evaluated`.
 */
export const AI_MODELS = ['local-v1', 'external-preview'] as const;
export type AiModel = (typeof AI_MODELS)[number];
export const DEFAULT_AI_MODEL: AiModel = 'local-v1';

/** The provider that implements each model, or null when this build has none. */
const PROVIDERS: Record<AiModel, (() => AiProvider) | null> = {
  'local-v1': () => new LocalAiProvider(),
  'external-preview': null,
};

export interface EvaluationCase {
  name: string;
  passed: boolean;
  detail: string;
}
export interface ModelEvaluation {
  model: AiModel;
  passed: boolean;
  cases: EvaluationCase[];
  evaluatedAt: Date;
}

const solid = (w: number, h: number, rgb: [number, number, number]) =>
  sharp({ create: { width: w, height: h, channels: 3, background: { r: rgb[0], g: rgb[1], b: rgb[2] } } })
    .png()
    .toBuffer();
const rgbOf = (hex: string) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));

/** The fixed suite: synthetic images whose right answers are known by construction. */
async function runSuite(p: AiProvider): Promise<EvaluationCase[]> {
  const cases: EvaluationCase[] = [];
  const check = async (name: string, fn: () => Promise<[boolean, string]>) => {
    try {
      const [passed, detail] = await fn();
      cases.push({ name, passed, detail });
    } catch (e) {
      cases.push({ name, passed: false, detail: `threw: ${(e as Error).message}` });
    }
  };
  await check('analyze: dimensions and dominant colour of a solid red 64x48 image', async () => {
    const a = await p.analyze(await solid(64, 48, [230, 10, 10]));
    const [r, g, b] = rgbOf(String(a.dominant_colour));
    return [a.width === 64 && a.height === 48 && r > 200 && g < 50 && b < 50, `${a.width}x${a.height} ${a.dominant_colour}`];
  });
  await check('moderation: a skin-toned image is flagged, a blue one approved', async () => {
    const skin = await p.moderate(await solid(32, 32, [224, 172, 140]));
    const blue = await p.moderate(await solid(32, 32, [20, 60, 220]));
    return [skin.verdict === 'flagged' && blue.verdict === 'approved', `${skin.verdict}/${blue.verdict}`];
  });
  await check('smart-crop: a 100x100 crop of a 400x200 image finds the salient square on the right', async () => {
    const img = await sharp(await solid(400, 200, [40, 40, 40]))
      .composite([{ input: await solid(60, 60, [255, 240, 0]), left: 300, top: 70 }])
      .png()
      .toBuffer();
    const { result } = await p.smartCrop(img, 100, 100);
    const crop = result.crop as { x: number; width: number };
    return [crop.x >= 200 && crop.width === 200, JSON.stringify(result.crop)];
  });
  await check('background-remove: a black square on white is a quarter of the pixels', async () => {
    const img = await sharp(await solid(200, 200, [255, 255, 255]))
      .composite([{ input: await solid(100, 100, [0, 0, 0]), left: 50, top: 50 }])
      .png()
      .toBuffer();
    const { result } = await p.removeBackground(img);
    const ratio = result.foreground_ratio as number;
    return [Math.abs(ratio - 0.25) < 0.02, `foreground ${ratio}`];
  });
  await check('generation: deterministic for one prompt, red for a red prompt', async () => {
    const a = await p.generate('a red square', 64, 64, 0);
    const b = await p.generate('a red square', 64, 64, 0);
    const [r, g, bl] = rgbOf(String((await p.analyze(a.output)).dominant_colour));
    return [a.output.equals(b.output) && r > 150 && g < 60 && bl < 60, `dominant ${r},${g},${bl}`];
  });
  return cases;
}

/** Evaluations of this process, by model (each suite runs once). */
const evaluations = new Map<AiModel, Promise<ModelEvaluation>>();

export function evaluateModel(model: AiModel): Promise<ModelEvaluation> {
  let e = evaluations.get(model);
  if (!e) {
    const make = PROVIDERS[model];
    e = make
      ? runSuite(make()).then((cases) => ({ model, passed: cases.every((c) => c.passed), cases, evaluatedAt: new Date() }))
      : Promise.resolve({
          model,
          passed: false,
          cases: [{ name: 'provider', passed: false, detail: 'no provider for this model in this build' }],
          evaluatedAt: new Date(),
        });
    evaluations.set(model, e);
  }
  return e;
}

/** The provider of a model that passed the gate, or null. */
export async function gatedProvider(model: AiModel): Promise<AiProvider | null> {
  const e = await evaluateModel(model);
  const make = PROVIDERS[model];
  return e.passed && make ? make() : null;
}
