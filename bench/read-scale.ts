/**
 * Scale curve of the hot publisher reads (decision 0015): GET …/metadata (lookups by _id) and
 * GET …/recovery-points (a filter on projectId, sorted) with 1k, 10k (and, opt-in, 100k) documents
 * in each collection the routes read — other accounts' sites, recovery points and newsletter
 * providers, copied from one real site (untimed, bulk) — through the bridge and through the plain
 * Fastify + mongoose baseline, at concurrency 1 (latency) and BENCH_CONCURRENCY (req/s).
 *
 * On the default engines (the MongoDB-wire server, decision 0001) only an exact unique-index filter
 * avoids a scan, so the list read grows with its collection while the _id lookups stay flat. Point
 * MONGODB_URI at a real MongoDB to get the same curve there.
 *
 *   npm run -s build && node dist/bench/read-scale.js        (BENCH_SCALE_SIZES=1000,10000,100000)
 *   or: BENCH_ONLY=scale npm run bench
 */
// The platform's logger reads LOG_LEVEL when it is first built: quiet before anything loads.
process.env.LOG_LEVEL ??= 'warn';
import 'reflect-metadata';
import { randomBytes, randomUUID } from 'node:crypto';
import { startPlatform } from '../app/platform';
import { loadConfig } from '../core/config';
import { startPlainPublisher } from './baselines/plain-publisher';
import { loadInWorker } from './load-stats';
import { benchSite, startPatiently } from './bench-kit';

process.env.APOLLO_TELEMETRY_DISABLED = '1';
const SIZES = (process.env.BENCH_SCALE_SIZES ?? '1000,10000').split(',').map(Number);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const BATCH = 1000;

async function main(): Promise<void> {
  const id = randomBytes(4).toString('hex');
  const base = loadConfig(process.env);
  const uri = base.mongodbUri.replace(/\/[^/?]*(\?|$)/, `/bench_${id}$1`);
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '100000000', MONGODB_URI: uri });
  const platform = await startPatiently(() =>
    startPlatform({
      config,
      bridgePort: 0,
      routerPort: 0,
      cdnPort: 0,
      subgraphBasePort: 0,
      topicPrefix: `bench${id}`,
    }),
  );
  const plain = await startPlainPublisher(uri);
  try {
    const created = await platform.services.identity.createApiKey({ accountSlug: `bench-${id}`, plan: 'pro' });
    const projectId = await benchSite(platform, created.key, 20);
    const m = platform.services.publisher.sites.models;
    const site = (await m.Site.findById(projectId).lean())!;
    const point = (await m.RecoveryPoint.findOne({ projectId }).lean())!;
    const provider = {
      accountId: site.accountId,
      domain: 'news.example.org',
      region: 'eu',
      fromEmail: 'news@example.org',
      fromName: null,
      apiKeyCiphertext: 'x',
      createdAt: new Date(),
      updatedAt: new Date(),
    };
    const headers = { authorization: `Bearer ${created.key}` };
    console.log(
      `read scale: documents per collection (publisher_sites, publisher_recovery_points, publisher_newsletter_providers) ` +
        `vs latency at c=1 and req/s at c=${CONCURRENCY}, ${SECONDS} s each (node ${process.version}, ${new Date().toISOString()})`,
    );
    console.log(
      '| documents | route | platform p50 / p99 ms (c=1) | plain p50 / p99 ms (c=1) | platform req/s | plain req/s | ratio |',
    );
    console.log('| --- | --- | --- | --- | --- | --- | --- |');
    let have = 1;
    for (const size of SIZES) {
      // Fill up to `size` documents per collection: other accounts' sites, their points and providers.
      const t0 = performance.now();
      for (let i = have; i < size; i += BATCH) {
        const n = Math.min(BATCH, size - i);
        const ids = Array.from({ length: n }, () => randomUUID());
        const account = randomUUID();
        await m.Site.collection.insertMany(
          ids.map((_id, k) => ({ ...site, _id, accountId: account, slug: `s-${i + k}` }) as never),
        );
        await m.RecoveryPoint.collection.insertMany(
          ids.map((p) => ({ ...point, _id: randomUUID(), projectId: p, accountId: account }) as never),
        );
        await m.NewsletterProvider.collection.insertMany(ids.map((_id) => ({ ...provider, _id, accountId: account }) as never));
      }
      have = size;
      const fillS = ((performance.now() - t0) / 1000).toFixed(0);
      for (const [name, suffix] of [
        ['metadata', '/metadata'],
        ['recovery-points', '/recovery-points'],
      ] as const) {
        const p = `/api/v1/publisher/projects/${projectId}${suffix}`;
        const sub = { url: `${platform.bridgeUrl}${p}`, headers };
        const bas = { url: `${plain.url}${p}`, headers };
        const s1 = await loadInWorker(sub, 1, SECONDS, 20);
        const b1 = await loadInWorker(bas, 1, SECONDS, 20);
        const sc = await loadInWorker(sub, CONCURRENCY, SECONDS, 0);
        const bc = await loadInWorker(bas, CONCURRENCY, SECONDS, 0);
        const ms = (f: { p50: number; p99: number }) => `${f.p50.toFixed(1)} / ${f.p99.toFixed(1)}`;
        console.log(
          `| ${size} (filled in ${fillS} s) | ${name} | ${ms(s1)} | ${ms(b1)} | ${sc.rps.toFixed(0)} | ${bc.rps.toFixed(0)} | ${(sc.rps / bc.rps).toFixed(2)} |`,
        );
      }
    }
  } finally {
    await plain.close();
    await platform.conn.dropDatabase().catch(() => undefined);
    await platform.stop();
  }
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
