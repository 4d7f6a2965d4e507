/**
 * Assets bulk-job figures (decision 0025): items per second of one `POST /api/v1/assets/bulk` job of
 * BENCH_BULK_ITEMS (default 10,000) revisioned items, half `visibility` and half `add_tags`, from
 * the 202 to the job's `succeeded` as polled through the bridge. The records are seeded directly
 * (the job touches only records), so the figure is the job's own rate: one point read and one
 * conditional update on the asset's `{_id, revision}` index per item, results written per chunk
 * of 500. A second job over the same items with the now stale revisions measures the refusal
 * path (every item 412). Run: `npm run -s build && node dist/bench/assets-bulk.js`.
 */
import 'reflect-metadata';
import { newId } from '../core/ids';
import { startBenchPlatform } from './bench-platform';

process.env.APOLLO_TELEMETRY_DISABLED = '1';
const N = Number(process.env.BENCH_BULK_ITEMS ?? 10_000);

async function main(): Promise<void> {
  const bench = await startBenchPlatform('bench-assets-bulk');
  const { platform, id } = bench;
  const bridge = platform.bridgeUrl!;
  try {
    const { key, accountId } = await platform.services.identity.createApiKey({ accountSlug: `bench-${id}`, plan: 'pro' });
    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    console.log(`assets bulk bench (node ${process.version}, ${N} items, ${new Date().toISOString()})`);
    const now = new Date();
    const ids = Array.from({ length: N }, () => newId());
    let t0 = performance.now();
    for (let i = 0; i < N; i += 1000)
      await platform.conn.collection('assets').insertMany(
        ids.slice(i, i + 1000).map((assetId, j) => ({
          _id: assetId as never,
          accountId,
          bucketId: 'bench',
          key: `bench/${i + j}`,
          folder: 'bench',
          visibility: 'private',
          cacheControl: 'public, max-age=60',
          metadata: {},
          originalName: `${i + j}.txt`,
          tags: [],
          mimeType: 'text/plain',
          type: 'document',
          size: 1,
          checksum: '0'.repeat(64),
          status: 'ready',
          scanStatus: 'clean',
          replicationStatus: 'not_required',
          moderationStatus: 'not_requested',
          quarantineStatus: 'none',
          revision: 1,
          currentVersion: 1,
          versions: [],
          branches: [],
          homeRegion: 'local-1',
          replicaRegions: [],
          replicatedRegions: [],
          createdAt: now,
          updatedAt: now,
          outbox: [],
        })),
      );
    console.log(`seeded ${N} asset records in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const items = ids.map((assetId, i) =>
      i % 2 === 0
        ? { asset_id: assetId, revision: 1, action: 'visibility', visibility: 'public' }
        : { asset_id: assetId, revision: 1, action: 'add_tags', tags: ['bench'] },
    );

    const run = async (label: string) => {
      t0 = performance.now();
      const sub = await fetch(`${bridge}/api/v1/assets/bulk`, { method: 'POST', headers: auth, body: JSON.stringify({ items }) });
      if (sub.status !== 202) throw new Error(`bulk HTTP ${sub.status}: ${await sub.text()}`);
      const accepted = performance.now() - t0;
      const jobId = ((await sub.json()) as { data: { job_id: string } }).data.job_id;
      let job: { status: string; succeeded: number; failed: number };
      for (;;) {
        const r = await fetch(`${bridge}/api/v1/assets/bulk/${jobId}?limit=1`, { headers: auth });
        job = ((await r.json()) as { data: typeof job }).data;
        if (job.status === 'succeeded' || job.status === 'failed') break;
        await new Promise((res) => setTimeout(res, 100));
      }
      const s = (performance.now() - t0) / 1000;
      console.log(
        `${label}: ${N} items in ${s.toFixed(1)} s = ${(N / s).toFixed(0)} items/s (202 after ${accepted.toFixed(0)} ms; ${job.succeeded} succeeded, ${job.failed} failed)`,
      );
    };
    await run('bulk visibility/add_tags, every revision current');
    await run('same items again, every revision stale (412 each)');
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
