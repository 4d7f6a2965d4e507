/**
 * Assets image-transformation figures (decision 0023), one run on this machine:
 *  1. A 12 MP JPEG (4000×3000) → 800 px wide WebP through signed `/tr/` addresses on {cdn_url},
 *     each address uncached (a distinct quality), sequentially: transforms per second (and the
 *     same work with sharp alone, in-process, as the floor).
 *  2. A cached derivative (named transform `/t/{preset}/assets/{id}`) in requests per second
 *     against a plain static server (node http + fs stream) sending the same bytes, keep-alive, c=32,
 *     BENCH_CDN_SECONDS each (default 5), the client in a worker thread.
 *  3. The platform's RSS growth while 20 uncached transforms of the 12 MP source run at once.
 * Run: `npm run -s build && node dist/bench/assets-transform.js` (the engines must be up).
 */
import 'reflect-metadata';
import { createReadStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import sharp from 'sharp';
import { hammerInWorker } from './keep-alive-load';
import type { AssetsService } from '../subgraphs/assets/storage/service';
import { startBenchPlatform } from './bench-platform';

process.env.APOLLO_TELEMETRY_DISABLED = '1';
const CDN_SECONDS = Number(process.env.BENCH_CDN_SECONDS ?? 5);
const SEQUENTIAL = Number(process.env.BENCH_TRANSFORMS ?? 8);
const MiB = 1024 ** 2;

async function main(): Promise<void> {
  const benchRun = await startBenchPlatform('assets-tr-bench');
  const { platform, id, dir, bridge } = benchRun;
  const cdn = platform.cdnUrl!;
  const svc = (platform.services as unknown as { assets: { assets: AssetsService } }).assets.assets;
  try {
    const { key } = await platform.services.identity.createApiKey({ accountSlug: `bench-${id}`, plan: 'pro' });
    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    console.log(`assets transform bench (node ${process.version}, sharp ${sharp.versions.sharp}, ${new Date().toISOString()})`);

    // A 12 MP photo-like JPEG (smooth gradients plus noise, so it compresses like a photo).
    const W = 4000;
    const H = 3000;
    const raw = Buffer.alloc(W * H * 3);
    for (let y = 0; y < H; y++)
      for (let x = 0; x < W; x++) {
        const i = (y * W + x) * 3;
        const n = (Math.random() * 24) | 0;
        raw[i] = ((x / W) * 200 + n) | 0;
        raw[i + 1] = ((y / H) * 200 + n) | 0;
        raw[i + 2] = (((x + y) / (W + H)) * 200 + n) | 0;
      }
    const jpeg = await sharp(raw, { raw: { width: W, height: H, channels: 3 } })
      .jpeg({ quality: 85 })
      .toBuffer();
    const fd = new FormData();
    fd.append('visibility', 'public');
    fd.append('file', new Blob([jpeg]), 'photo.jpg');
    const up = (await (
      await fetch(`${bridge}/api/v1/assets/upload`, { method: 'POST', headers: { authorization: auth.authorization }, body: fd })
    ).json()) as {
      data: { id: string };
    };
    const assetId = up.data.id;
    console.log(`source: ${W}×${H} JPEG, ${(jpeg.length / MiB).toFixed(1)} MiB`);

    const signed = (spec: string) => {
      const pathname = `/assets/${assetId}/tr/${spec}/photo.webp`;
      const exp = Math.floor(Date.now() / 1000) + 3600;
      return `${cdn}${pathname}?exp=${exp}&sig=${svc.transforms.signPath(pathname, exp)}`;
    };
    const spec800 = (q: number) => `w_800,c_inside,g_center,f_webp,q_${q}`;

    // 1. Uncached transforms, sequential.
    const before = svc.transforms.computations;
    let t0 = performance.now();
    for (let i = 0; i < SEQUENTIAL; i++) {
      const res = await fetch(signed(spec800(60 + i)));
      if (res.status !== 200) throw new Error(`transform HTTP ${res.status}`);
      await res.arrayBuffer();
    }
    const viaCdn = SEQUENTIAL / ((performance.now() - t0) / 1000);
    t0 = performance.now();
    for (let i = 0; i < SEQUENTIAL; i++)
      await sharp(jpeg)
        .rotate()
        .resize({ width: 800 })
        .webp({ quality: 60 + i })
        .toBuffer();
    const bare = SEQUENTIAL / ((performance.now() - t0) / 1000);
    console.log(
      `12 MP JPEG → 800 px WebP, uncached, sequential (${svc.transforms.computations - before} computations): ${viaCdn.toFixed(2)} transforms/s via {cdn_url}; sharp alone in-process ${bare.toFixed(2)}/s`,
    );

    // 2. Cached derivative vs a plain static server.
    await fetch(`${bridge}/api/v1/assets/transformations`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        name: 'w800',
        version: 2,
        definition: { operations: [{ type: 'resize', width: 800, fit: 'inside' }], format: 'webp' },
      }),
    });
    const named = `${cdn}/t/w800/assets/${assetId}`;
    const derivative = Buffer.from(await (await fetch(named)).arrayBuffer());
    // The plain server streams the same bytes from a file, as the CDN plane streams the blob.
    const file = path.join(dir, 'd.webp');
    await writeFile(file, derivative);
    const plain = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'image/webp', 'content-length': derivative.length });
      createReadStream(file).pipe(res);
    });
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
    const plainRps = await hammerInWorker(
      `http://127.0.0.1:${(plain.address() as { port: number }).port}/d.webp`,
      32,
      CDN_SECONDS,
      50,
    );
    const cdnRps = await hammerInWorker(named, 32, CDN_SECONDS, 50);
    // The same bytes as a plain public asset on {cdn_url}: the CDN listener's own baseline.
    const fd2 = new FormData();
    fd2.append('visibility', 'public');
    fd2.append('file', new Blob([derivative]), 'd.webp');
    const up2 = (await (
      await fetch(`${bridge}/api/v1/assets/upload`, { method: 'POST', headers: { authorization: auth.authorization }, body: fd2 })
    ).json()) as { data: { id: string } };
    const assetRps = await hammerInWorker(`${cdn}/assets/${up2.data.id}/versions/1/d.webp`, 32, CDN_SECONDS, 50);
    plain.close();
    console.log(`same bytes as a plain public asset on {cdn_url}: ${assetRps.toFixed(0)} req/s`);
    console.log(
      `cached derivative (${(derivative.length / 1024).toFixed(0)} KiB WebP) /t/w800: ${cdnRps.toFixed(0)} req/s vs plain static server ${plainRps.toFixed(0)} req/s = ${((cdnRps / plainRps) * 100).toFixed(0)} % (c=32, ${CDN_SECONDS} s each)`,
    );

    // 3. RSS during 20 concurrent uncached transforms.
    global.gc?.();
    const rss0 = process.memoryUsage().rss;
    let peak = rss0;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
    const c0 = svc.transforms.computations;
    t0 = performance.now();
    await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const res = await fetch(signed(`w_${700 + i},c_inside,g_center,f_webp,q_75`));
        if (res.status !== 200) throw new Error(`transform HTTP ${res.status}`);
        await res.arrayBuffer();
      }),
    );
    clearInterval(sampler);
    const secs = (performance.now() - t0) / 1000;
    console.log(
      `20 concurrent uncached transforms (${svc.transforms.computations - c0} computations) in ${secs.toFixed(1)} s: RSS ${(rss0 / MiB).toFixed(0)} → peak ${(peak / MiB).toFixed(0)} MiB (growth ${((peak - rss0) / MiB).toFixed(0)} MiB)`,
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
