// eslint-disable-next-line @typescript-eslint/triple-slash-reference -- the ambient s3rver types live beside the tests
/// <reference path="../test/support/s3rver.d.ts" />
/**
 * Assets migration throughput (decision 0028): BENCH_MIGRATION_OBJECTS (default 500) objects of
 * BENCH_MIGRATION_KIB KiB (default 16) in the s3rver stand-in, copied into a bucket by one
 * migration through the whole platform (listing, per-item state, checksums, asset records), as
 * items per second; beside it, a plain sequential GET of the same objects with the AWS SDK (the
 * source's own speed on this machine).
 * Run: `npm run -s build && node dist/bench/assets-migration.js` (the engines must be up).
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { startPlatform } from '../app/platform';
import { loadConfig } from '../core/config';
import { newId } from '../core/ids';
import { s3Client } from '../core/blobs/s3-blob-store';

process.env.APOLLO_TELEMETRY_DISABLED = '1';
const OBJECTS = Number(process.env.BENCH_MIGRATION_OBJECTS ?? 500);
const KIB = Number(process.env.BENCH_MIGRATION_KIB ?? 16);

async function main(): Promise<void> {
  const id = newId().slice(0, 8);
  const dir = await mkdtemp(path.join(tmpdir(), 'bench-migration-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', directory: path.join(dir, 's3'), silent: true });
  const endpoint = `http://127.0.0.1:${(await server.run()).port}`;
  const client = s3Client({ endpoint, accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' });
  await client.send(new CreateBucketCommand({ Bucket: 'bench' }));
  for (let i = 0; i < OBJECTS; i++)
    await client.send(new PutObjectCommand({ Bucket: 'bench', Key: `o/${i}.bin`, Body: randomBytes(KIB * 1024) }));

  let t0 = performance.now();
  for (let i = 0; i < OBJECTS; i++) {
    const r = await client.send(new GetObjectCommand({ Bucket: 'bench', Key: `o/${i}.bin` }));
    await r.Body!.transformToByteArray();
  }
  const rawPerS = OBJECTS / ((performance.now() - t0) / 1000);
  client.destroy();

  const base = loadConfig(process.env);
  const config = loadConfig({
    ...process.env,
    MONGODB_URI: base.mongodbUri.replace(/\/[^/?]*(\?|$)/, `/bench_${id}$1`),
    ASSETS_BLOB_DIR: path.join(dir, 'blobs'),
    OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
    LOG_LEVEL: 'warn',
  });
  const platform = await startPlatform({
    config,
    bridgePort: 0,
    routerPort: 0,
    cdnPort: 0,
    subgraphBasePort: 0,
    topicPrefix: `bench${id}`,
  });
  try {
    const { key } = await platform.services.identity.createApiKey({ accountSlug: `bench-${id}`, plan: 'pro' });
    const api = async (method: string, p: string, body?: unknown) =>
      (
        (await (
          await fetch(`${platform.bridgeUrl}${p}`, {
            method,
            headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
            body: body ? JSON.stringify(body) : undefined,
          })
        ).json()) as { data: any }
      ).data;
    const conn = await api('POST', '/api/v1/assets/connections', {
      name: 'bench',
      type: 's3',
      config: { endpoint, bucket: 'bench', access_key_id: 'S3RVER' },
      secrets: { secret_access_key: 'S3RVER' },
    });
    t0 = performance.now();
    const m = await api('POST', '/api/v1/assets/migrations', { connection: conn.id });
    let status = m.status;
    let counts = m.counts;
    while (status === 'queued' || status === 'running') {
      await new Promise((r) => setTimeout(r, 100));
      ({ status, counts } = await api('GET', `/api/v1/assets/migrations/${m.id}`));
    }
    const seconds = (performance.now() - t0) / 1000;
    console.log(`assets migration bench (node ${process.version}, ${new Date().toISOString()})`);
    console.log(`objects ${OBJECTS} × ${KIB} KiB; migration ${status}, copied ${counts.copied}, failed ${counts.failed}`);
    console.log(`migration: ${seconds.toFixed(1)} s = ${(OBJECTS / seconds).toFixed(1)} items/s`);
    console.log(`plain sequential SDK GET of the same objects: ${rawPerS.toFixed(1)} objects/s`);
  } finally {
    await platform.conn.dropDatabase().catch(() => undefined);
    await platform.stop();
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
