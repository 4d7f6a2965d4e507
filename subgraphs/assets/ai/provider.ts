import { createHash } from 'node:crypto';
import sharp from 'sharp';

/**
 * The AI provider interface (spec 4.3 AI actions and generations) and the local provider. The
 * local provider computes only what the pixels honestly give (no labels, no invented captions)
 * and names itself in every result (`provider: "local"`), so nobody mistakes it for a model.
 */
export interface AiProvider {
  /** Provider name reported in every result (`local`). */
  readonly name: string;
  analyze(image: Buffer): Promise<Record<string, unknown>>;
  moderate(image: Buffer): Promise<Record<string, unknown>>;
  /** A crop of `width`×`height` chosen by saliency; the cropped image and the box in source pixels. */
  smartCrop(image: Buffer, width: number, height: number): Promise<{ result: Record<string, unknown>; output: Buffer }>;
  /** A foreground cut-out (PNG with the mask as alpha). */
  removeBackground(image: Buffer): Promise<{ result: Record<string, unknown>; output: Buffer }>;
  generate(
    prompt: string,
    width: number,
    height: number,
    index: number,
  ): Promise<{ result: Record<string, unknown>; output: Buffer }>;
}

export const LOCAL_PROVIDER = 'local';
/** Inputs are decoded at most this large (the provider works on a thumbnail for statistics). */
const MAX_INPUT_PIXELS = 100_000_000;
/** Edge of the thumbnail colour statistics and masks are computed on. */
const STATS_EDGE = 128;

/**
 * The moderation rule of the local provider, documented here and in decision 0026: a pixel is
 * "skin-toned" when its YCbCr chroma lies in 77 ≤ Cb ≤ 127 and 133 ≤ Cr ≤ 173 (Chai & Ngan, 1999);
 * an image with more than `MODERATION_SKIN_RATIO` of such pixels is `flagged` for human review,
 * otherwise `approved`. It is a crude heuristic, said so in every verdict.
 */
export const MODERATION_SKIN_RATIO = 0.4;
export const MODERATION_RULE = `flagged when more than ${MODERATION_SKIN_RATIO * 100}% of pixels have YCbCr chroma 77<=Cb<=127 and 133<=Cr<=173 (skin-tone heuristic); otherwise approved`;
/** A pixel belongs to the foreground when its colour is this far (Euclidean RGB) from the border's median. */
export const BACKGROUND_DISTANCE = 48;

/** Named colours the local generator recognises in a prompt (the first one found is the base colour). */
export const PROMPT_COLOURS: Record<string, [number, number, number]> = {
  red: [220, 20, 20],
  green: [20, 170, 40],
  blue: [20, 60, 220],
  yellow: [240, 210, 20],
  orange: [245, 130, 20],
  purple: [130, 40, 170],
  pink: [240, 120, 180],
  black: [10, 10, 10],
  white: [245, 245, 245],
  grey: [128, 128, 128],
  gray: [128, 128, 128],
};

const hex = (r: number, g: number, b: number) =>
  `#${[r, g, b]
    .map((v) =>
      Math.max(0, Math.min(255, Math.round(v)))
        .toString(16)
        .padStart(2, '0'),
    )
    .join('')}`;

async function thumbnail(image: Buffer): Promise<{ data: Buffer; width: number; height: number }> {
  const { data, info } = await sharp(image, { limitInputPixels: MAX_INPUT_PIXELS })
    .rotate()
    .resize(STATS_EDGE, STATS_EDGE, { fit: 'inside' })
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

/** The most frequent colours on a 4-bit-per-channel grid, as hex with their share of pixels. */
function dominantColours(data: Buffer, top = 5): { hex: string; ratio: number }[] {
  const bins = new Map<number, { n: number; r: number; g: number; b: number }>();
  const pixels = data.length / 3;
  for (let i = 0; i < data.length; i += 3) {
    const k = ((data[i] >> 4) << 8) | ((data[i + 1] >> 4) << 4) | (data[i + 2] >> 4);
    const bin = bins.get(k) ?? { n: 0, r: 0, g: 0, b: 0 };
    bin.n++;
    bin.r += data[i];
    bin.g += data[i + 1];
    bin.b += data[i + 2];
    bins.set(k, bin);
  }
  return [...bins.values()]
    .sort((a, b) => b.n - a.n)
    .slice(0, top)
    .map((b) => ({ hex: hex(b.r / b.n, b.g / b.n, b.b / b.n), ratio: Math.round((b.n / pixels) * 1000) / 1000 }));
}

function skinRatio(data: Buffer): number {
  let skin = 0;
  for (let i = 0; i < data.length; i += 3) {
    const [r, g, b] = [data[i], data[i + 1], data[i + 2]];
    const cb = 128 - 0.168736 * r - 0.331264 * g + 0.5 * b;
    const cr = 128 + 0.5 * r - 0.418688 * g - 0.081312 * b;
    if (cb >= 77 && cb <= 127 && cr >= 133 && cr <= 173) skin++;
  }
  return skin / (data.length / 3);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
};

export class LocalAiProvider implements AiProvider {
  readonly name = LOCAL_PROVIDER;

  async analyze(image: Buffer): Promise<Record<string, unknown>> {
    const meta = await sharp(image, { limitInputPixels: MAX_INPUT_PIXELS }).metadata();
    const stats = await sharp(image, { limitInputPixels: MAX_INPUT_PIXELS }).stats();
    const t = await thumbnail(image);
    // EXIF orientations 5–8 swap the displayed width and height.
    const swap = (meta.orientation ?? 1) >= 5;
    return {
      provider: this.name,
      width: swap ? meta.height : meta.width,
      height: swap ? meta.width : meta.height,
      format: meta.format ?? null,
      has_alpha: meta.hasAlpha ?? false,
      dominant_colour: hex(stats.dominant.r, stats.dominant.g, stats.dominant.b),
      dominant_colours: dominantColours(t.data),
      entropy: Math.round(stats.entropy * 1000) / 1000,
      sharpness: Math.round(stats.sharpness * 1000) / 1000,
      opaque: stats.isOpaque,
      labels: [],
      note: 'local provider: measurements of the pixels only; it recognises no objects',
    };
  }

  async moderate(image: Buffer): Promise<Record<string, unknown>> {
    const t = await thumbnail(image);
    const ratio = skinRatio(t.data);
    return {
      provider: this.name,
      verdict: ratio > MODERATION_SKIN_RATIO ? 'flagged' : 'approved',
      skin_tone_ratio: Math.round(ratio * 1000) / 1000,
      rule: MODERATION_RULE,
    };
  }

  async smartCrop(image: Buffer, width: number, height: number): Promise<{ result: Record<string, unknown>; output: Buffer }> {
    const src = sharp(image, { limitInputPixels: MAX_INPUT_PIXELS }).rotate();
    const { data: upright, info: up } = await src.toBuffer({ resolveWithObject: true });
    const { data, info } = await sharp(upright)
      .resize(width, height, { fit: 'cover', position: sharp.strategy.attention })
      .png()
      .toBuffer({ resolveWithObject: true });
    // libvips scales to cover first, then crops: map the crop offsets back to source pixels (sharp
    // reports them as a shift of the image, so negative; the magnitude is the offset).
    const scale = Math.max(width / up.width, height / up.height);
    const box = {
      x: Math.round(Math.abs(info.cropOffsetLeft ?? 0) / scale),
      y: Math.round(Math.abs(info.cropOffsetTop ?? 0) / scale),
      width: Math.round(width / scale),
      height: Math.round(height / scale),
    };
    return {
      result: {
        provider: this.name,
        strategy: 'attention',
        source: { width: up.width, height: up.height },
        crop: box,
        output: { width: info.width, height: info.height, format: 'png' },
      },
      output: data,
    };
  }

  async removeBackground(image: Buffer): Promise<{ result: Record<string, unknown>; output: Buffer }> {
    const { data, info } = await sharp(image, { limitInputPixels: MAX_INPUT_PIXELS })
      .rotate()
      .resize(2048, 2048, { fit: 'inside', withoutEnlargement: true })
      .removeAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true });
    const { width: w, height: h } = info;
    // The background colour is the per-channel median of the border pixels.
    const border: number[][] = [[], [], []];
    const take = (x: number, y: number) => {
      const i = (y * w + x) * 3;
      for (let c = 0; c < 3; c++) border[c].push(data[i + c]);
    };
    for (let x = 0; x < w; x++) {
      take(x, 0);
      take(x, h - 1);
    }
    for (let y = 0; y < h; y++) {
      take(0, y);
      take(w - 1, y);
    }
    const bg = border.map(median);
    const rgba = Buffer.alloc(w * h * 4);
    let fg = 0;
    for (let p = 0; p < w * h; p++) {
      const [r, g, b] = [data[p * 3], data[p * 3 + 1], data[p * 3 + 2]];
      const d = Math.hypot(r - bg[0], g - bg[1], b - bg[2]);
      const keep = d > BACKGROUND_DISTANCE;
      if (keep) fg++;
      rgba[p * 4] = r;
      rgba[p * 4 + 1] = g;
      rgba[p * 4 + 2] = b;
      rgba[p * 4 + 3] = keep ? 255 : 0;
    }
    const output = await sharp(rgba, { raw: { width: w, height: h, channels: 4 } })
      .png()
      .toBuffer();
    return {
      result: {
        provider: this.name,
        method: `border-median colour key: a pixel is background when within ${BACKGROUND_DISTANCE} (RGB distance) of the median border colour`,
        background_colour: hex(bg[0], bg[1], bg[2]),
        foreground_ratio: Math.round((fg / (w * h)) * 1000) / 1000,
        output: { width: w, height: h, format: 'png' },
      },
      output,
    };
  }

  async generate(
    prompt: string,
    width: number,
    height: number,
    index: number,
  ): Promise<{ result: Record<string, unknown>; output: Buffer }> {
    const digest = createHash('sha256').update(`${prompt}\u0000${index}`).digest();
    const word = prompt
      .toLowerCase()
      .split(/[^a-z]+/)
      .find((w) => w in PROMPT_COLOURS);
    const base: [number, number, number] = word ? PROMPT_COLOURS[word] : [digest[0], digest[1], digest[2]];
    // Second stop: the same colour slightly darker (a named colour stays that colour) or a hashed one.
    const other: [number, number, number] = word
      ? [base[0] * 0.85, base[1] * 0.85, base[2] * 0.85]
      : [digest[3], digest[4], digest[5]];
    const angle = digest[6] % 4;
    const [x2, y2] = [
      ['100%', '0%'],
      ['0%', '100%'],
      ['100%', '100%'],
      ['0%', '0%'],
    ][angle];
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><defs><linearGradient id="g" x1="0%" y1="${angle === 3 ? '100%' : '0%'}" x2="${x2}" y2="${y2}"><stop offset="0%" stop-color="${hex(...base)}"/><stop offset="100%" stop-color="${hex(...other)}"/></linearGradient></defs><rect width="100%" height="100%" fill="url(#g)"/></svg>`;
    const output = await sharp(Buffer.from(svg)).png().toBuffer();
    return {
      result: {
        provider: this.name,
        generator: 'local-gradient-v1',
        prompt_sha256: createHash('sha256').update(prompt).digest('hex'),
        base_colour: hex(...base),
        width,
        height,
        note: 'local provider: a deterministic gradient derived from the prompt, not a generative model',
      },
      output,
    };
  }
}
