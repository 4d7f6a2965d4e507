/**
 * Assets figures, measured in one run on this machine (decision 0020):
 *  1. upload throughput of a BENCH_UPLOAD_MIB (default 1024) file through POST /api/v1/assets/upload
 *     and through a chunked upload session, as a ratio of a raw loopback write of the same bytes to
 *     disk (a plain node HTTP server piping the body to a file), and the platform's RSS growth
 *     during each (sampled every 50 ms). The client is curl, another process.
 *  2. CDN requests per second for a 100 KiB public asset against a plain static file server (node
 *     http + fs stream) serving the same file, keep-alive, concurrency 32, BENCH_CDN_SECONDS each
 *     (default 5), the client in a worker thread.
 *  3. GET /api/v1/assets with BENCH_LIST_ASSETS (default 20000) assets in the space: p50/p99 of
 *     the first page and of a deep cursor page (BENCH_LIST_REQUESTS each, default 200).
 * Run: `npm run -s build && node dist/bench/assets.js` (the engines must be up).
 */
import 'reflect-metadata';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { open, rm, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { hammerInWorker } from './keep-alive-load';
import { newId } from '../core/ids';
import { startBenchPlatform } from './bench-platform';

process.env.APOLLO_TELEMETRY_DISABLED = '1';
const run = promisify(execFile);
const MiB = 1024 ** 2;
const UPLOAD_MIB = Number(process.env.BENCH_UPLOAD_MIB ?? 1024);
const CDN_SECONDS = Number(process.env.BENCH_CDN_SECONDS ?? 5);
const LIST_ASSETS = Number(process.env.BENCH_LIST_ASSETS ?? 20_000);
const LIST_REQUESTS = Number(process.env.BENCH_LIST_REQUESTS ?? 200);
const PART_MIB = 8;
/** Which parts to run: any of `upload,cdn,list` (default all). */
const PARTS = new Set((process.env.BENCH_PARTS ?? 'upload,cdn,list').split(','));

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const rssMiB = () => process.memoryUsage().rss / MiB;

/** Peak RSS above the value at the start, while `work` runs. */
async function withRss<T>(work: () => Promise<T>): Promise<{ result: T; seconds: number; rssGrowthMiB: number }> {
  global.gc?.();
  const before = rssMiB();
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, rssMiB())), 50);
  const t0 = performance.now();
  try {
    const result = await work();
    return { result, seconds: (performance.now() - t0) / 1000, rssGrowthMiB: peak - before };
  } finally {
    clearInterval(timer);
  }
}

async function makeFile(dir: string, mib: number): Promise<string> {
  const file = path.join(dir, 'upload.bin');
  const block = randomBytes(MiB);
  const fh = await open(file, 'w');
  for (let i = 0; i < mib; i++) {
    block[0] = i & 0xff; // blocks differ, so nothing downstream can deduplicate them
    await fh.write(block);
  }
  await fh.close();
  return file;
}

/** The baseline: the same bytes over loopback HTTP into a file, nothing else. */
async function rawLoopback(file: string, dir: string): Promise<number> {
  const out = path.join(dir, 'raw.out');
  const server = http.createServer((req, res) => {
    void pipeline(req, createWriteStream(out)).then(() => res.end('ok'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const t0 = performance.now();
  await run('curl', ['-sS', '-o', '/dev/null', '-T', file, `http://127.0.0.1:${port}/`], { maxBuffer: 1 << 20 });
  const seconds = (performance.now() - t0) / 1000;
  server.close();
  await rm(out, { force: true });
  return seconds;
}

async function sha256File(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const c of createReadStream(file)) h.update(c as Buffer);
  return h.digest('hex');
}

async function main(): Promise<void> {
  const benchRun = await startBenchPlatform('assets-bench');
  const { platform, id, dir, bridge } = benchRun;
  try {
    const created = await platform.services.identity.createApiKey({ accountSlug: `bench-${id}`, plan: 'pro' });
    const auth = `Authorization: Bearer ${created.key}`;
    console.log(`assets bench (node ${process.version}, ${new Date().toISOString()})`);

    // 1. Uploads.
    if (PARTS.has('upload')) await uploads();
    async function uploads() {
      const file = await makeFile(dir, UPLOAD_MIB);
      const size = (await stat(file)).size;
      const sha = await sha256File(file);
      const raw = await rawLoopback(file, dir);
      const single = await withRss(() =>
        run(
          'curl',
          ['-sS', '-H', auth, '-F', `key=bench/${id}/single`, '-F', `file=@${file}`, `${bridge}/api/v1/assets/upload`],
          {
            maxBuffer: 1 << 20,
          },
        ),
      );
      const uploaded = JSON.parse(single.result.stdout) as { data?: { checksum_sha256: string } };
      if (uploaded.data?.checksum_sha256 !== sha) throw new Error(`upload failed: ${single.result.stdout.slice(0, 300)}`);

      const chunked = await withRss(async () => {
        const res = await fetch(`${bridge}/api/v1/assets/upload-sessions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${created.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            mode: 'chunked',
            file_name: 'chunked.bin',
            file_size: size,
            part_size: PART_MIB * MiB,
            key: `bench/${id}/chunked`,
            checksum_sha256: sha,
          }),
        });
        const s = ((await res.json()) as { data: { url: string; upload_session_id: string; part_count: number } }).data;
        const parts = Array.from({ length: s.part_count }, (_, i) => i + 1);
        // Four parts in flight, each read by dd and sent by curl (other processes: the platform's RSS is its own).
        const next = async (): Promise<void> => {
          const n = parts.shift();
          if (n === undefined) return;
          const dd = `dd if='${file}' bs=${PART_MIB}M skip=${n - 1} count=1 status=none`;
          const partSha = (await run('sh', ['-c', `${dd} | sha256sum`])).stdout.split(' ')[0];
          await run('sh', [
            '-c',
            `${dd} | curl -sS -f -o /dev/null -H 'X-Content-SHA256: ${partSha}' -T - '${s.url}/parts/${n}'`,
          ]);
          return next();
        };
        await Promise.all([next(), next(), next(), next()]);
        const done = await fetch(`${bridge}/api/v1/assets/upload-sessions/${s.upload_session_id}/complete`, {
          method: 'POST',
          headers: { authorization: `Bearer ${created.key}` },
        });
        const body = (await done.json()) as { data?: { checksum_sha256: string } };
        if (body.data?.checksum_sha256 !== sha) throw new Error(`complete failed: ${JSON.stringify(body).slice(0, 300)}`);
      });
      const mibps = (s: number) => (size / MiB / s).toFixed(0);
      console.log(`upload ${UPLOAD_MIB} MiB: raw loopback write ${raw.toFixed(2)} s (${mibps(raw)} MiB/s)`);
      console.log(
        `  POST /upload     ${single.seconds.toFixed(2)} s (${mibps(single.seconds)} MiB/s) = ${((raw / single.seconds) * 100).toFixed(0)} % of raw; RSS growth ${single.rssGrowthMiB.toFixed(1)} MiB`,
      );
      console.log(
        `  chunked session  ${chunked.seconds.toFixed(2)} s (${mibps(chunked.seconds)} MiB/s) = ${((raw / chunked.seconds) * 100).toFixed(0)} % of raw; RSS growth ${chunked.rssGrowthMiB.toFixed(1)} MiB (parts of ${PART_MIB} MiB, 4 in flight; includes the client hashing each part first)`,
      );
      await rm(file, { force: true });
    }

    // 2. CDN against a plain static server on the same bytes.
    if (PARTS.has('cdn')) await cdnBench();
    async function cdnBench() {
      const small = path.join(dir, 'small.bin');
      await writeFile(small, randomBytes(100 * 1024));
      const up = await run('curl', [
        '-sS',
        '-H',
        auth,
        '-F',
        'visibility=public',
        '-F',
        `file=@${small}`,
        `${bridge}/api/v1/assets/upload`,
      ]);
      const publicUrl = (JSON.parse(up.stdout) as { data: { url: string } }).data.url.replace(
        /^https?:\/\/[^/]+/,
        platform.cdnUrl!,
      );
      const plain = http.createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': 100 * 1024 });
        createReadStream(small).pipe(res);
      });
      await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
      const plainUrl = `http://127.0.0.1:${(plain.address() as { port: number }).port}/small.bin`;
      const plainRps = await hammerInWorker(plainUrl, 32, CDN_SECONDS);
      const cdnRps = await hammerInWorker(publicUrl, 32, CDN_SECONDS);
      plain.close();
      console.log(
        `CDN 100 KiB public asset: ${cdnRps.toFixed(0)} req/s vs plain static server ${plainRps.toFixed(0)} req/s = ${((cdnRps / plainRps) * 100).toFixed(0)} % (c=32, ${CDN_SECONDS} s each)`,
      );
    }

    // 3. List at LIST_ASSETS assets.
    if (PARTS.has('list')) await listBench();
    async function listBench() {
      const accountId = created.accountId;
      const bucket = await platform.services.assets.assets.buckets.ensureDefault(accountId);
      const now = Date.now();
      const docs = Array.from({ length: LIST_ASSETS }, (_, i) => {
        const sha256 = createHash('sha256').update(`${id}-${i}`).digest('hex');
        const at = new Date(now - i * 1000);
        return {
          _id: newId(),
          accountId,
          bucketId: bucket._id,
          key: `list/${String(i).padStart(6, '0')}.txt`,
          folder: 'list',
          visibility: 'private',
          cacheControl: 'no-cache',
          metadata: {},
          originalName: `${i}.txt`,
          tags: [],
          mimeType: 'text/plain',
          type: 'document',
          size: 100 + i,
          checksum: sha256,
          status: 'ready',
          scanStatus: 'clean',
          replicationStatus: 'not_required',
          moderationStatus: 'not_requested',
          quarantineStatus: 'none',
          revision: 1,
          currentVersion: 1,
          versions: [
            { number: 1, sha256, size: 100 + i, mimeType: 'text/plain', originalName: `${i}.txt`, branch: 'main', createdAt: at },
          ],
          branches: [],
          homeRegion: bucket.homeRegion,
          replicaRegions: [],
          replicatedRegions: [],
          createdAt: at,
          updatedAt: at,
          outbox: [],
        };
      });
      for (let i = 0; i < docs.length; i += 1000)
        await platform.services.assets.assets.m.Asset.insertMany(docs.slice(i, i + 1000));
      const get = async (query: string) => {
        const t0 = performance.now();
        const res = await fetch(`${bridge}/api/v1/assets?${query}`, { headers: { authorization: `Bearer ${created.key}` } });
        const body = (await res.json()) as { data: { next_cursor: string; total: number } };
        if (res.status !== 200) throw new Error(JSON.stringify(body));
        return { ms: performance.now() - t0, body: body.data };
      };
      let cursor = '';
      for (let page = 0; page < 100; page++)
        cursor = (await get(`limit=50&cursor=${encodeURIComponent(cursor)}`)).body.next_cursor || cursor;
      const series = async (q: string) => {
        const times: number[] = [];
        for (let i = 0; i < LIST_REQUESTS; i++) times.push((await get(q)).ms);
        times.sort((a, b) => a - b);
        return `p50 ${pct(times, 50).toFixed(1)} ms, p99 ${pct(times, 99).toFixed(1)} ms`;
      };
      const total = (await get('limit=50')).body.total;
      console.log(`GET /assets with ${total} assets, limit 50, ${LIST_REQUESTS} sequential requests each:`);
      console.log(`  first page            ${await series('limit=50')}`);
      console.log(`  deep page (page 101)  ${await series(`limit=50&cursor=${encodeURIComponent(cursor)}`)}`);
    }
  } finally {
    await benchRun.stop();
  }
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
