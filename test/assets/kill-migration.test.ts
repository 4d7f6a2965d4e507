import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { Connection } from 'mongoose';
import S3rver from 's3rver';
import { COPY_CONCURRENCY } from '../../subgraphs/assets/migrations/migrations';
import { s3Client } from '../../core/blobs/s3-blob-store';
import { IdentityService } from '../../subgraphs/identity/service';
import { assertBuilt, childPlatformScope } from '../support/child-platform';

/**
 * `kill -9` of the platform (the built `platform start all`) twice in the middle of a migration
 * from the S3 stand-in: after each restart the run resumes on the operation engine, and in the end
 * every object is in the bucket exactly once, with its checksum; items copied before a kill are not
 * touched again. Uses dist/ (`npm run build`).
 */
const OBJECTS = 60;
const scope = childPlatformScope();
const { id } = scope;
const sha = (b: string) => createHash('sha256').update(b).digest('hex');
let conn: Connection;
let blobDir: string;
let s3dir: string;
let server: S3rver;
let endpoint: string;
const objects = Object.fromEntries(
  Array.from({ length: OBJECTS }, (_, i) => [
    `batch/o${String(i).padStart(3, '0')}.txt`,
    `object ${i} ${randomBytes(12).toString('hex')}`,
  ]),
);

const startChild = () =>
  scope.start({
    env: {
      ASSETS_BLOB_DIR: blobDir,
      OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
      // Four lanes at 1 s an item: ~4 items/s, slow enough that a restarted child (whose worker
      // resumes the run while the rest of the platform is still starting) cannot finish the
      // migration before the test sees it up and gets to kill it again.
      ASSETS_MIGRATION_ITEM_DELAY_MS: '1000',
      OPERATION_LEASE_MS: '1000',
    },
  });

const copied = () => conn.collection('asset_migration_items').countDocuments({ status: 'copied' });
async function until(what: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await what())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 25));
  }
}

beforeAll(async () => {
  assertBuilt();
  blobDir = await mkdtemp(path.join(tmpdir(), 'assets-killmig-'));
  s3dir = await mkdtemp(path.join(tmpdir(), 's3rver-killmig-'));
  server = new S3rver({ port: 0, address: '127.0.0.1', directory: s3dir, silent: true });
  endpoint = `http://127.0.0.1:${(await server.run()).port}`;
  const client = s3Client({ endpoint, accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' });
  await client.send(new CreateBucketCommand({ Bucket: 'legacy' }));
  for (const [Key, Body] of Object.entries(objects)) await client.send(new PutObjectCommand({ Bucket: 'legacy', Key, Body }));
  client.destroy();
  conn = await scope.connect({ indexes: true });
});
afterAll(async () => {
  await scope.cleanup();
  await server.close();
  await rm(blobDir, { recursive: true, force: true });
  await rm(s3dir, { recursive: true, force: true });
});

it('a migration killed with SIGKILL twice resumes and copies every object exactly once', async () => {
  let running = await startChild();
  const { key } = await new IdentityService(conn).createApiKey({ accountSlug: `killmig-${id}`, plan: 'pro' });
  const api = async (method: string, p: string, body?: unknown) => {
    const res = await fetch(`${running.bridgeUrl}${p}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const c = await api('POST', '/api/v1/assets/connections', {
    name: 'legacy',
    type: 's3',
    config: { endpoint, bucket: 'legacy', access_key_id: 'S3RVER' },
    secrets: { secret_access_key: 'S3RVER' },
  });
  expect(c.status).toBe(201);
  const bucket = (await api('POST', '/api/v1/assets/buckets', { name: 'moved' })).body.data;
  const m = await api('POST', '/api/v1/assets/migrations', { connection: c.body.data.id, bucket: bucket.id });
  expect(m.status).toBe(202);
  const migrationId = m.body.data.id;

  const before = new Map<string, { copiedAt: Date; assetId: string }>();
  for (let kill = 0; kill < 2; kill++) {
    // Each kill lands once 8 more items are copied than when this child was seen up.
    const from = await copied();
    await until(async () => (await copied()) >= from + 8);
    await running.kill();
    for (const i of await conn.collection('asset_migration_items').find({ migrationId, status: 'copied' }).toArray()) {
      if (!before.has(String(i._id))) before.set(String(i._id), { copiedAt: i.copiedAt, assetId: i.assetId });
    }
    expect(before.size).toBeLessThan(OBJECTS);
    running = await startChild();
  }

  let final: any;
  await until(async () => {
    final = (await api('GET', `/api/v1/assets/migrations/${migrationId}`)).body.data;
    return final.status !== 'queued' && final.status !== 'running';
  }, 120_000);
  expect(final).toMatchObject({ status: 'succeeded', counts: { total: OBJECTS, copied: OBJECTS, failed: 0 } });

  // Exactly one asset per object, one version each, the source's bytes.
  const assets = await conn.collection('assets').find({ bucketId: bucket.id }).toArray();
  expect(assets).toHaveLength(OBJECTS);
  expect(await conn.collection('assets').countDocuments({})).toBe(OBJECTS);
  expect(new Set(assets.map((a) => a.key)).size).toBe(OBJECTS);
  for (const a of assets) {
    expect(a.versions).toHaveLength(1);
    expect(a.status).toBe('ready');
    expect(a.checksum).toBe(sha(objects[a.key]));
  }
  // Items copied before a kill were not copied again.
  const items = await conn.collection('asset_migration_items').find({ migrationId }).toArray();
  for (const i of items) {
    const earlier = before.get(String(i._id));
    if (earlier) expect({ copiedAt: i.copiedAt, assetId: i.assetId }).toEqual(earlier);
  }
  // Only the items in flight at a kill (COPY_CONCURRENCY at most) were attempted twice.
  expect(items.filter((i) => i.attempts > 1).length).toBeLessThanOrEqual(2 * COPY_CONCURRENCY);
  // The run is one durable operation resumed, not a second run.
  const ops = await conn.collection('operations').find({ resourceId: migrationId }).toArray();
  expect(ops).toHaveLength(1);
  expect(ops[0]).toMatchObject({ status: 'completed' });
  expect(ops[0].attempt).toBeGreaterThanOrEqual(3);
}, 300_000);
