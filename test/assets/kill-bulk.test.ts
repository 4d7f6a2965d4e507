import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Connection } from 'mongoose';
import { newId } from '../../core/ids';
import { IdentityService } from '../../subgraphs/identity/service';
import { assertBuilt, childPlatformScope } from '../support/child-platform';

/**
 * `kill -9` of the platform (the built `platform start all`) in the middle of a bulk job: after a
 * restart the job resumes and ends with every item applied exactly once (each asset's revision went
 * up by one and carries one bulk mark) and the stale item still refused with 412. Uses dist/.
 */
const N = Number(process.env.KILL_BULK_ITEMS ?? 2000);
const scope = childPlatformScope();
const { id } = scope;
let conn: Connection;
let server: http.Server | undefined;

const startChild = () =>
  scope.start({
    env: {
      OPERATION_LEASE_MS: '1500',
      OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
      ASSETS_WEBHOOK_LEASE_MS: '2000',
      ASSETS_WEBHOOK_POLL_MS: '100',
      ASSETS_WEBHOOK_RETRY_BASE_MS: '200',
    },
  });

beforeAll(async () => {
  assertBuilt();
  conn = await scope.connect();
});
afterAll(async () => {
  await scope.cleanup();
  if (server) await new Promise((r) => server!.close(r));
});

it('kill -9 during a bulk job: after restart every item is applied exactly once', async () => {
  let running = await startChild();
  const { key, accountId } = await new IdentityService(conn).createApiKey({ accountSlug: `killbulk-${id}`, plan: 'pro' });
  // A webhook receiver in this process: it survives the platform's death and counts event ids.
  const seen = new Map<string, string>();
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.set(String(req.headers['webhook-id']), JSON.parse(body).type);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const hook = await fetch(`${running.bridgeUrl}/api/v1/assets/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
      event_types: ['asset.updated', 'job.finished'],
    }),
  });
  expect(hook.status).toBe(201);

  // Records seeded directly (the bulk job touches only the record): revision 1, ready, private.
  const now = new Date();
  const ids = Array.from({ length: N }, () => newId());
  await conn.collection('assets').insertMany(
    ids.map((assetId, i) => ({
      _id: assetId as never,
      accountId,
      bucketId: 'seed',
      key: `seed/${i}`,
      folder: 'seed',
      visibility: 'private',
      cacheControl: 'public, max-age=60',
      metadata: {},
      originalName: `${i}.txt`,
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
  const items = [
    ...ids.map((assetId, i) =>
      i % 2 === 0
        ? { asset_id: assetId, revision: 1, action: 'visibility', visibility: 'public' }
        : { asset_id: assetId, revision: 1, action: 'add_tags', tags: ['k'] },
    ),
    { asset_id: ids[0], revision: 7, action: 'add_tags', tags: ['stale'] },
  ];
  const sub = await fetch(`${running.bridgeUrl}/api/v1/assets/bulk`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ items }),
  });
  expect(sub.status).toBe(202);
  const jobId = ((await sub.json()) as any).data.job_id as string;

  // Kill once part of the items is applied, before the job can finish.
  const marked = () => conn.collection('assets').countDocuments({ bulkMarks: { $exists: true } });
  const deadline = Date.now() + 60_000;
  while ((await marked()) < N / 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await running.kill();
  const atKill = await marked();
  expect(atKill).toBeGreaterThan(0);
  expect(atKill).toBeLessThan(N);

  running = await startChild();
  let job: any;
  const until = Date.now() + 120_000;
  while (Date.now() < until) {
    const r = await fetch(`${running.bridgeUrl}/api/v1/assets/bulk/${jobId}?limit=1`, {
      headers: { authorization: `Bearer ${key}` },
    });
    job = ((await r.json()) as any).data;
    if (job?.status === 'succeeded') break;
    await new Promise((r) => setTimeout(r, 200));
  }
  expect(job).toMatchObject({ status: 'succeeded', total: N + 1, succeeded: N, failed: 1 });
  const op = await conn.collection('operations').findOne({ _id: jobId as never });
  expect(op?.attempt).toBeGreaterThanOrEqual(2);

  const docs = await conn
    .collection('assets')
    .find({ accountId }, { projection: { revision: 1, bulkMarks: 1, tags: 1, visibility: 1 } })
    .toArray();
  expect(docs).toHaveLength(N);
  const byId = new Map(docs.map((d) => [String(d._id), d]));
  ids.forEach((assetId, i) => {
    const d = byId.get(assetId)!;
    expect(d.revision).toBe(2);
    expect(d.bulkMarks).toEqual([`${jobId}:${i}`]);
    if (i % 2 === 0) expect(d.visibility).toBe('public');
    else expect(d.tags).toEqual(['k']);
  });
  // Every result page, in order: N successes, then the stale item's 412.
  const results: any[] = [];
  let cursor = '';
  do {
    const q = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
    const r = await fetch(`${running.bridgeUrl}/api/v1/assets/bulk/${jobId}?limit=1000${q}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const data = ((await r.json()) as any).data;
    results.push(...data.results);
    cursor = data.next_cursor;
  } while (cursor);
  expect(results).toHaveLength(N + 1);
  expect(results.slice(0, N).every((x) => x.status === 'succeeded' && x.revision === 2)).toBe(true);
  expect(results[N]).toMatchObject({ status: 'failed', status_code: 412, error_code: 'assets.revision_mismatch', revision: 2 });

  // Webhooks: one asset.updated per applied item and one job.finished, none lost to the kill
  // (deliveries are records; a claim the dead process held lapses and is sent again, same id).
  // A delivery the dead process sent but had not recorded yet is sent again once its lease lapses
  // (30 s): the receiver already counted it, so wait for the records too.
  const wait = Date.now() + 120_000;
  const count = (type: string) => [...seen.values()].filter((t) => t === type).length;
  const unsettled = () => conn.collection('asset_webhook_deliveries').countDocuments({ status: { $ne: 'succeeded' } });
  while ((count('asset.updated') < N || count('job.finished') < 1 || (await unsettled()) > 0) && Date.now() < wait)
    await new Promise((r) => setTimeout(r, 200));
  expect(count('asset.updated')).toBe(N);
  expect(count('job.finished')).toBe(1);
  expect(await unsettled()).toBe(0);
}, 300_000);
