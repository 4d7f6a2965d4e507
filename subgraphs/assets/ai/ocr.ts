import path from 'node:path';
import sharp from 'sharp';
import { createWorker, OEM, type Worker } from 'tesseract.js';

/**
 * OCR with tesseract.js (Tesseract compiled to WebAssembly, decision 0026). Everything it loads
 * comes from node_modules: the engine from `tesseract.js-core` (required by the worker script),
 * the English LSTM model from `@tesseract.js-data/eng` (`langPath` is a directory, which the
 * worker reads with `fs`, never `fetch`), and no cache is written. The test
 * `subgraphs/assets/text/ocr.test.ts` runs these exact options in a process without a network
 * namespace (`unshare -rn`), which proves nothing is fetched at run time.
 */
export const OCR_ENGINE = 'tesseract.js 7 (tesseract 5 LSTM, eng 4.0.0_best_int)';
export const OCR_LANGUAGE = 'eng';
/** Images are scaled so their longer edge is at most this before recognition (time and memory). */
const MAX_OCR_EDGE = 4000;
/** Text kept per extraction: 256 KiB of characters. */
export const MAX_TEXT_CHARS = 256 * 1024;

export function ocrWorkerOptions(): { langPath: string; corePath: string; cacheMethod: string; gzip: boolean } {
  return {
    langPath: path.join(path.dirname(require.resolve('@tesseract.js-data/eng/package.json')), '4.0.0_best_int'),
    corePath: path.dirname(require.resolve('tesseract.js-core/package.json')),
    cacheMethod: 'none',
    gzip: true,
  };
}

export interface OcrResult {
  text: string;
  confidence: number;
  words: number;
}

/**
 * One recognition worker per process, created on first use and used one image at a time (a
 * tesseract worker is single-threaded; a queue keeps memory flat).
 */
export class OcrEngine {
  private worker: Promise<Worker> | null = null;
  private queue: Promise<unknown> = Promise.resolve();

  private get(): Promise<Worker> {
    this.worker ??= createWorker(OCR_LANGUAGE, OEM.LSTM_ONLY, ocrWorkerOptions()).catch((e) => {
      this.worker = null;
      throw e;
    });
    return this.worker;
  }

  recognize(image: Buffer): Promise<OcrResult> {
    const run = this.queue.then(async () => {
      // Tesseract reads PNG best; a flattened greyscale PNG also removes alpha it would see as black.
      const png = await sharp(image, { limitInputPixels: 100_000_000 })
        .rotate()
        .resize(MAX_OCR_EDGE, MAX_OCR_EDGE, { fit: 'inside', withoutEnlargement: true })
        .flatten({ background: '#ffffff' })
        .greyscale()
        .png()
        .toBuffer();
      const { data } = await (await this.get()).recognize(png);
      const text = data.text.trim().slice(0, MAX_TEXT_CHARS);
      return { text, confidence: Math.round(data.confidence), words: text ? text.split(/\s+/).length : 0 };
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  async stop(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (w) await (await w).terminate().catch(() => undefined);
  }
}
