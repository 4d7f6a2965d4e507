import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Connection } from 'mongoose';
import { newId } from '../../core/ids';
import { IdentityService } from '../../subgraphs/identity/service';
import { assertBuilt, childPlatformScope } from '../support/child-platform';

/**
 * `kill -9` of the platform (the built `platform start all`) in the middle of a bucket relocation:
 * after a restart the engine resumes the job, which ends with every object's bytes verified in the
 * new region root, every record switched once, and the bucket's home moved. Uses dist/.
 */
const N = Number(process.env.KILL_RELOCATION_OBJECTS ?? 150);
const scope = childPlatformScope();
let conn: Connection;
let blobDir: string;

const startChild = () => scope.start({ env: { OPERATION_LEASE_MS: '1500', ASSETS_BLOB_DIR: blobDir } });
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const blobPath = (region: string, hex: string) => path.join(blobDir, region, 'blobs', hex.slice(0, 2), hex);

beforeAll(async () => {
  assertBuilt();
  blobDir = await mkdtemp(path.join(tmpdir(), 'kill-relocation-'));
  conn = await scope.connect({ indexes: true });
});
afterAll(async () => {
  await scope.cleanup();
  await rm(blobDir, { recursive: true, force: true });
});

it('kill -9 during a relocation: after restart every object is copied, verified and switched', async () => {
  let running = await startChild();
  const { key, accountId } = await new IdentityService(conn).createApiKey({ accountSlug: `killreloc-${scope.id}`, plan: 'pro' });
  const created = await fetch(`${running.bridgeUrl}/api/v1/assets/objstore-buckets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'moving' }),
  });
  expect(created.status).toBe(201);
  const bucketId = ((await created.json()) as any).data.id as string;

  // Objects seeded directly (bytes in the local-1 root, records pointing there): 16 KiB each.
  const now = new Date();
  const bodies = Array.from({ length: N }, () => randomBytes(16 * 1024));
  const docs = [];
  for (let i = 0; i < N; i++) {
    const hex = sha(bodies[i]);
    await mkdir(path.dirname(blobPath('local-1', hex)), { recursive: true });
    await writeFile(blobPath('local-1', hex), bodies[i]);
    docs.push({
      _id: newId() as never,
      accountId,
      bucketId,
      key: `seed/${String(i).padStart(4, '0')}.bin`,
      folder: 'seed',
      visibility: 'public',
      cacheControl: 'public, max-age=60',
      metadata: {},
      originalName: `${i}.bin`,
      tags: [],
      mimeType: 'application/octet-stream',
      type: 'other',
      size: bodies[i].length,
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
          size: bodies[i].length,
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
  await conn.collection('assets').insertMany(docs);

  const started = await fetch(`${running.bridgeUrl}/api/v1/assets/buckets/${bucketId}/relocations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ region: 'local-2' }),
  });
  expect(started.status).toBe(202);
  const relId = ((await started.json()) as any).data.id as string;

  // Kill once part of the objects switched, before the job can finish.
  const switched = () => conn.collection('assets').countDocuments({ bucketId, homeRegion: 'local-2' });
  const deadline = Date.now() + 60_000;
  while ((await switched()) < N / 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await running.kill();
  const atKill = await switched();
  const restartedAt = Date.now();
  expect(atKill).toBeGreaterThan(0);
  expect(atKill).toBeLessThan(N);

  running = await startChild();
  let rel: any;
  const until = Date.now() + 180_000;
  while (Date.now() < until) {
    const r = await fetch(`${running.bridgeUrl}/api/v1/assets/buckets/${bucketId}/relocations/${relId}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    rel = ((await r.json()) as any).data;
    if (rel?.status === 'succeeded' || rel?.status === 'failed') break;
    await new Promise((r) => setTimeout(r, 200));
  }
  console.log(`relocation: ${atKill}/${N} switched at the kill, finished ${Date.now() - restartedAt} ms after the restart`);
  expect(rel).toMatchObject({ status: 'succeeded', objects_total: N, objects_switched: N, to_region: 'local-2' });
  const op = await conn.collection('operations').findOne({ _id: relId as never });
  expect(op?.attempt).toBeGreaterThanOrEqual(2);

  expect(await switched()).toBe(N);
  for (let i = 0; i < N; i++) expect((await readFile(blobPath('local-2', sha(bodies[i])))).equals(bodies[i])).toBe(true);
  const bucket = await conn.collection('asset_buckets').findOne({ _id: bucketId as never });
  expect(bucket?.homeRegion).toBe('local-2');
  // Records were moved, never re-revisioned: a client's If-Match stays valid.
  expect(await conn.collection('assets').countDocuments({ bucketId, revision: 1 })).toBe(N);
  // Still readable on the CDN after the move.
  if (running.cdnUrl) {
    const a = docs[7] as any;
    const res = await fetch(`${running.cdnUrl}/assets/${a._id}/versions/1/${a.originalName}`);
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(bodies[7])).toBe(true);
  }
}, 300_000);
