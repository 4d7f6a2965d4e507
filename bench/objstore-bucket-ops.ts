/**
 * Object-store bucket operation figures (decision 0029):
 *
 * 1. CDN reads of one public object of an object-store bucket, BENCH_CDN_REQUESTS (default 2,000)
 *    at concurrency 16: requests per second and p50/p99 latency with the access-log hook on, then
 *    how long after the last response every entry is readable through `/access-logs` and counted
 *    in `/analytics` (the batched writer's lag).
 * 2. A relocation of BENCH_RELOCATION_OBJECTS (default 500) objects of 16 KiB seeded directly into
 *    the `local-1` root: objects and MiB per second from the 202 to `succeeded` (copy, read-back
 *    SHA-256 check and conditional switch per object).
 *
 * Run: `npm run -s build && node dist/bench/objstore-bucket-ops.js`.
 */
import 'reflect-metadata';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { newId } from '../core/ids';
import { startBenchPlatform } from './bench-platform';

process.env.APOLLO_TELEMETRY_DISABLED = '1';
const REQUESTS = Number(process.env.BENCH_CDN_REQUESTS ?? 2000);
const OBJECTS = Number(process.env.BENCH_RELOCATION_OBJECTS ?? 500);
const CONCURRENCY = 16;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

async function main(): Promise<void> {
  const bench = await startBenchPlatform('bench-bucket-ops');
  const { platform, id } = bench;
  const blobDir = path.join(bench.dir, 'blobs');
  const bridge = platform.bridgeUrl!;
  const cdn = platform.cdnUrl!;
  try {
    const { key, accountId } = await platform.services.identity.createApiKey({ accountSlug: `bench-${id}`, plan: 'pro' });
    const json = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    console.log(`object-store bucket ops bench (node ${process.version}, ${new Date().toISOString()})`);
    const created = await fetch(`${bridge}/api/v1/assets/objstore-buckets`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ name: 'bench', default_visibility: 'public' }),
    });
    const bucketId = ((await created.json()) as any).data.id as string;
    const fd = new FormData();
    fd.append('bucket', bucketId);
    fd.append('key', 'img/bench.bin');
    fd.append('file', new Blob([randomBytes(4096)]), 'bench.bin');
    const up = await fetch(`${bridge}/api/v1/assets/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    });
    const url = (((await up.json()) as any).data.url as string).replace(/^https?:\/\/[^/]+/, cdn);

    // Baseline: the same reads of an object in a plain Assets bucket (no log entries are written).
    const plain = await fetch(`${bridge}/api/v1/assets/buckets`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ name: 'plain', default_visibility: 'public' }),
    });
    const plainId = ((await plain.json()) as any).data.id as string;
    const fd2 = new FormData();
    fd2.append('bucket', plainId);
    fd2.append('file', new Blob([randomBytes(4096)]), 'plain.bin');
    const up2 = await fetch(`${bridge}/api/v1/assets/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: fd2,
    });
    const plainUrl = (((await up2.json()) as any).data.url as string).replace(/^https?:\/\/[^/]+/, cdn);
    const reads = async (u: string) => {
      const lat: number[] = [];
      let next = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < REQUESTS) {
            next++;
            const s = performance.now();
            const res = await fetch(u);
            await res.arrayBuffer();
            lat.push(performance.now() - s);
          }
        }),
      );
      return { lat, elapsed: performance.now() - t0 };
    };
    const baseline = await reads(plainUrl);
    console.log(
      `cdn reads, plain bucket (baseline): ${Math.round(REQUESTS / (baseline.elapsed / 1000))} req/s, ` +
        `p50 ${pct(baseline.lat, 50).toFixed(1)} ms, p99 ${pct(baseline.lat, 99).toFixed(1)} ms`,
    );
    // 1. CDN reads with access logs and counters written.
    const { lat, elapsed } = await reads(url);
    const tEnd = performance.now();
    const want = REQUESTS + 1; // the reads and the upload
    for (;;) {
      const r = await fetch(`${bridge}/api/v1/buckets/${bucketId}/analytics`, { headers: json });
      const d = ((await r.json()) as any).data;
      if (d.requests >= want) break;
      if (performance.now() - tEnd > 60_000) throw new Error(`analytics counted ${d.requests} of ${want}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const lag = performance.now() - tEnd;
    console.log(
      `cdn reads, object-store bucket (logged): ${REQUESTS} at concurrency ${CONCURRENCY}: ${Math.round(REQUESTS / (elapsed / 1000))} req/s, ` +
        `p50 ${pct(lat, 50).toFixed(1)} ms, p99 ${pct(lat, 99).toFixed(1)} ms; ` +
        `all ${want} requests counted in analytics ${Math.round(lag)} ms after the last response`,
    );

    // 2. Relocation of seeded objects.
    const now = new Date();
    const docs = [];
    for (let i = 0; i < OBJECTS; i++) {
      const body = randomBytes(16 * 1024);
      const hex = createHash('sha256').update(body).digest('hex');
      const p = path.join(blobDir, 'local-1', 'blobs', hex.slice(0, 2), hex);
      await mkdir(path.dirname(p), { recursive: true });
      await writeFile(p, body);
      docs.push({
        _id: newId() as never,
        accountId,
        bucketId,
        key: `seed/${i}.bin`,
        folder: 'seed',
        visibility: 'public',
        cacheControl: 'public, max-age=60',
        metadata: {},
        originalName: `${i}.bin`,
        tags: [],
        mimeType: 'application/octet-stream',
        type: 'other',
        size: body.length,
        checksum: hex,
        status: 'ready',
        scanStatus: 'clean',
        replicationStatus: 'not_required',
        moderationStatus: 'not_requested',
        quarantineStatus: 'none',
        revision: 1,
        currentVersion: 1,
        versions: [
          {
            number: 1,
            sha256: hex,
            size: body.length,
            mimeType: 'application/octet-stream',
            originalName: `${i}.bin`,
            branch: 'main',
            createdAt: now,
          },
        ],
        branches: [],
        homeRegion: 'local-1',
        replicaRegions: [],
        replicatedRegions: [],
        createdAt: now,
        updatedAt: now,
        outbox: [],
      });
    }
    await platform.conn.collection('assets').insertMany(docs);
    const r0 = performance.now();
    const started = await fetch(`${bridge}/api/v1/assets/buckets/${bucketId}/relocations`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ region: 'local-2' }),
    });
    const relId = ((await started.json()) as any).data.id as string;
    let rel: any;
    for (;;) {
      const r = await fetch(`${bridge}/api/v1/assets/buckets/${bucketId}/relocations/${relId}`, { headers: json });
      rel = ((await r.json()) as any).data;
      if (rel.status === 'succeeded' || rel.status === 'failed') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const secs = (performance.now() - r0) / 1000;
    console.log(
      `relocation: ${rel.status}, ${rel.objects_switched} objects (${(rel.bytes_copied / 1048576).toFixed(1)} MiB) in ${secs.toFixed(1)} s: ` +
        `${Math.round(rel.objects_switched / secs)} objects/s, ${(rel.bytes_copied / 1048576 / secs).toFixed(1)} MiB/s`,
    );
  } finally {
    await bench.stop();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
