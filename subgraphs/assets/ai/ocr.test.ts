import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ocrWorkerOptions } from './ocr';

/**
 * Proof that OCR needs no network: the exact worker options of `OcrEngine` are used in a child
 * process started in a new network namespace (`unshare -rn`: only a down loopback, no route
 * anywhere), which first checks that a fetch really fails there, then recognises rendered text.
 */
const canUnshare = spawnSync('unshare', ['-rn', 'true']).status === 0;

(canUnshare ? describe : describe.skip)('OCR without a network', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'ocr-offline-'));
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  it('loads engine and English model from node_modules and reads "HELLO 42" inside unshare -rn', async () => {
    const opts = ocrWorkerOptions();
    expect(opts.langPath).toMatch(/node_modules\/@tesseract\.js-data\/eng\/4\.0\.0_best_int$/);
    expect(opts.corePath).toMatch(/node_modules\/tesseract\.js-core$/);
    const script = path.join(dir, 'ocr.js');
    await writeFile(
      script,
      `
const sharp = require(${JSON.stringify(require.resolve('sharp'))});
const { createWorker, OEM } = require(${JSON.stringify(require.resolve('tesseract.js'))});
(async () => {
  const online = await fetch('https://cdn.jsdelivr.net/npm/@tesseract.js-data/eng/package.json').then(() => true, () => false);
  const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="600" height="200"><rect width="100%" height="100%" fill="white"/><text x="40" y="130" font-family="DejaVu Sans, sans-serif" font-size="96" fill="black">HELLO 42</text></svg>';
  const png = await sharp(Buffer.from(svg)).png().toBuffer();
  const worker = await createWorker('eng', OEM.LSTM_ONLY, ${JSON.stringify(opts)});
  const { data } = await worker.recognize(png);
  await worker.terminate();
  console.log(JSON.stringify({ online, text: data.text.trim() }));
})().catch((e) => { console.error(e); process.exit(1); });
`,
    );
    const run = spawnSync('unshare', ['-rn', process.execPath, script], { encoding: 'utf8', timeout: 120_000 });
    expect(run.status).toBe(0);
    const out = JSON.parse(run.stdout.trim().split('\n').pop() as string) as { online: boolean; text: string };
    expect(out.online).toBe(false);
    expect(out.text).toContain('HELLO 42');
  }, 150_000);
});
