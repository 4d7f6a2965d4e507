/**
 * Assets AI and OCR figures (decision 0026), one run on this machine:
 *  1. In-process: OCR (tesseract.js, one worker) of a 600×200 "HELLO 42" PNG and of a 1200×800
 *     PNG with six lines of text, per second; `analyze` of the local provider on a 1 MP and a
 *     12 MP image, per second (sequential).
 *  2. Through the platform (bridge → router → engine → ledger): sequential `POST /{id}/ai/analyze`
 *     and `POST /{id}/text-extraction` from the 202 until the job reads `succeeded`, jobs per second
 *     and p50 latency.
 * Run: `npm run -s build && node dist/bench/assets-ai.js` (the engines must be up).
 */
import 'reflect-metadata';
import sharp from 'sharp';
import { LocalAiProvider } from '../subgraphs/assets/ai/provider';
import { OcrEngine } from '../subgraphs/assets/ai/ocr';
import { startBenchPlatform } from './bench-platform';

process.env.APOLLO_TELEMETRY_DISABLED = '1';
const N = Number(process.env.BENCH_AI_N ?? 10);

const textImage = (w: number, h: number, lines: string[]) =>
  sharp(
    Buffer.from(
      `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}"><rect width="100%" height="100%" fill="white"/>${lines
        .map(
          (l, i) =>
            `<text x="30" y="${90 + i * 110}" font-family="DejaVu Sans, sans-serif" font-size="72" fill="black">${l}</text>`,
        )
        .join('')}</svg>`,
    ),
  )
    .png()
    .toBuffer();

async function photo(w: number, h: number): Promise<Buffer> {
  const raw = Buffer.alloc(w * h * 3);
  for (let i = 0; i < raw.length; i++) raw[i] = ((i % (w * 3)) / 3 / w) * 200 + ((Math.random() * 24) | 0);
  return sharp(raw, { raw: { width: w, height: h, channels: 3 } })
    .jpeg({ quality: 85 })
    .toBuffer();
}

async function rate(label: string, n: number, fn: (i: number) => Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const s = performance.now();
    await fn(i);
    times.push(performance.now() - s);
  }
  const secs = (performance.now() - t0) / 1000;
  times.sort((a, b) => a - b);
  console.log(`${label}: ${(n / secs).toFixed(2)} per s (n=${n}, p50 ${times[Math.floor(n / 2)].toFixed(0)} ms)`);
  return times;
}

async function main(): Promise<void> {
  console.log(`assets AI bench (node ${process.version}, sharp ${sharp.versions.sharp}, ${new Date().toISOString()})`);
  const ocr = new OcrEngine();
  const hello = await textImage(600, 200, ['HELLO 42']);
  const page = await textImage(1200, 800, [
    'The quick brown fox',
    'jumps over the lazy',
    'dog 0123456789',
    'PACK MY BOX WITH',
    'five dozen liquor',
    'jugs, said the bench',
  ]);
  const c0 = performance.now();
  await ocr.recognize(hello);
  console.log(`OCR worker start + first image: ${(performance.now() - c0).toFixed(0)} ms`);
  await rate('OCR 600×200 "HELLO 42"', N, () => ocr.recognize(hello));
  await rate('OCR 1200×800, six lines', N, () => ocr.recognize(page));
  await ocr.stop();
  const p = new LocalAiProvider();
  const mp1 = await photo(1200, 800);
  const mp12 = await photo(4000, 3000);
  await rate('analyze 1 MP JPEG (local provider)', N, () => p.analyze(mp1));
  await rate('analyze 12 MP JPEG (local provider)', Math.max(3, Math.floor(N / 2)), () => p.analyze(mp12));

  const benchRun = await startBenchPlatform('assets-ai-bench');
  const { platform, id, bridge } = benchRun;
  try {
    const { key } = await platform.services.identity.createApiKey({ accountSlug: `bench-${id}`, plan: 'pro' });
    const auth = { authorization: `Bearer ${key}` };
    const upload = async (bytes: Buffer, name: string) => {
      const fd = new FormData();
      fd.append('file', new Blob([bytes]), name);
      const r = (await (await fetch(`${bridge}/api/v1/assets/upload`, { method: 'POST', headers: auth, body: fd })).json()) as {
        data: { id: string };
      };
      return r.data.id;
    };
    const untilDone = async (statusUrl: string) => {
      const u = statusUrl.replace(/^https?:\/\/[^/]+/, bridge);
      for (;;) {
        const j = (await (await fetch(u, { headers: auth })).json()) as { data: { status: string } };
        if (j.data.status === 'succeeded') return;
        if (j.data.status === 'failed') throw new Error('job failed');
        await new Promise((r) => setTimeout(r, 25));
      }
    };
    const submit = async (p: string) => {
      const r = (await (await fetch(`${bridge}${p}`, { method: 'POST', headers: auth })).json()) as {
        data: { status_url: string };
      };
      await untilDone(r.data.status_url);
    };
    const photoId = await upload(mp1, 'photo.jpg');
    const helloId = await upload(hello, 'hello.png');
    await submit(`/api/v1/assets/${photoId}/ai/analyze`); // warm-up (the evaluation suite runs on first use)
    await rate('platform: POST analyze (1 MP) → succeeded', N, () => submit(`/api/v1/assets/${photoId}/ai/analyze`));
    await rate('platform: POST text-extraction ("HELLO 42") → succeeded', N, () =>
      submit(`/api/v1/assets/${helloId}/text-extraction`),
    );
  } finally {
    await benchRun.stop();
  }
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
