import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { s3Client } from '../../core/blobs/s3-blob-store';
import { startTestPlatform, type TestPlatform } from '../support/platform';

const sha = (b: string | Buffer) => createHash('sha256').update(b).digest('hex');

/** Connections (S3 stand-in and an HTTP origin) and migrations through the bridge. */
describe('assets connections and migrations', () => {
  let t: TestPlatform;
  let server: S3rver;
  let s3dir: string;
  let blobDir: string;
  let endpoint: string;
  let origin: http.Server;
  let originUrl: string;
  /** Objects of the HTTP origin; a path in `failOnce` answers 500 the first time. */
  const files: Record<string, string> = {};
  const failOnce = new Set<string>();
  let slowMs = 0;
  const objects = Object.fromEntries(
    Array.from({ length: 5 }, (_, i) => [`photos/p${i}.txt`, `photo number ${i} ${randomBytes(8).toString('hex')}`]),
  );

  beforeAll(async () => {
    s3dir = await mkdtemp(path.join(tmpdir(), 's3rver-conn-'));
    blobDir = await mkdtemp(path.join(tmpdir(), 'assets-conn-'));
    server = new S3rver({ port: 0, address: '127.0.0.1', directory: s3dir, silent: true });
    const { port } = await server.run();
    endpoint = `http://127.0.0.1:${port}`;
    const client = s3Client({ endpoint, accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' });
    await client.send(new CreateBucketCommand({ Bucket: 'source' }));
    for (const [Key, Body] of Object.entries(objects)) await client.send(new PutObjectCommand({ Bucket: 'source', Key, Body }));
    client.destroy();

    origin = http.createServer((req, res) => {
      if (req.headers.authorization !== 'Bearer origin-token') return res.writeHead(401).end();
      const p = decodeURIComponent((req.url ?? '/').slice(1));
      if (failOnce.delete(p)) return res.writeHead(500).end('try later');
      const body = files[p];
      if (body === undefined) return res.writeHead(404).end();
      setTimeout(() => res.writeHead(200).end(body), slowMs);
    });
    await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
    originUrl = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;
    t = await startTestPlatform({ ASSETS_BLOB_DIR: blobDir, OUTBOUND_ALLOW_HOSTS: '127.0.0.1' });
  });
  afterAll(async () => {
    await t.stop();
    await server.close();
    await new Promise((r) => origin.close(r));
    await rm(s3dir, { recursive: true, force: true });
    await rm(blobDir, { recursive: true, force: true });
  });

  const waitFor = async (key: string, id: string, done: (m: any) => boolean) => {
    const until = Date.now() + 30_000;
    for (;;) {
      const m = (await t.rest('GET', `/api/v1/assets/migrations/${id}`, { key })).body.data;
      if (done(m) || Date.now() > until) return m;
      await new Promise((r) => setTimeout(r, 150));
    }
  };
  const ended = (m: any) => !['queued', 'running'].includes(m.status);

  it('S3 connection: secrets write-only, revisions, verify; a migration copies every object with checksums', async () => {
    const { key } = await t.createKey();
    const body = {
      name: 'old store',
      type: 's3',
      config: { endpoint, bucket: 'source', prefix: 'photos/', access_key_id: 'S3RVER' },
      secrets: { secret_access_key: 'S3RVER-secret-value' },
    };
    const created = await t.rest('POST', '/api/v1/assets/connections', { key, body });
    expect(created.status).toBe(201);
    const c = created.body.data;
    expect(c).toMatchObject({
      name: 'old store',
      type: 's3',
      config: { endpoint, bucket: 'source', prefix: 'photos/', access_key_id: 'S3RVER', region: 'us-east-1' },
      has_secret_access_key: true,
      has_bearer_token: false,
      status: 'unverified',
      revision: 1,
    });
    expect(JSON.stringify(created.body)).not.toContain('S3RVER-secret-value');
    const stored = await t.platform.conn.collection('asset_connections').findOne({ _id: c.id } as never);
    expect(stored!.secrets.secret_access_key).toMatch(/^v1\./);
    expect(JSON.stringify(stored)).not.toContain('S3RVER-secret-value');

    expect((await t.rest('POST', '/api/v1/assets/connections', { key, body })).status).toBe(409);
    expect((await t.rest('POST', '/api/v1/assets/connections', { key, body: { ...body, extra: true } })).status).toBe(400);
    const unsafe = await t.rest('POST', '/api/v1/assets/connections', {
      key,
      body: { ...body, name: 'internal', config: { endpoint: 'http://10.1.2.3:9000', bucket: 'x' } },
    });
    expect(unsafe.status).toBe(400);
    expect(unsafe.body.error.code).toBe('assets.unsafe_url');

    const list = await t.rest('GET', '/api/v1/assets/connections', { key });
    expect(list.body.data.items.map((x: any) => x.id)).toEqual([c.id]);
    const one = await t.rest('GET', `/api/v1/assets/connections/${c.id}`, { key });
    expect(one.status).toBe(200);
    expect(one.headers.get('etag')).toBe('"1"');
    expect((await t.rest('GET', `/api/v1/assets/connections/${randomBytes(8).toString('hex')}`, { key })).status).toBe(404);

    // A bucket the source lacks fails verification (422, recorded); the right one passes.
    const stale = await t.rest('PATCH', `/api/v1/assets/connections/${c.id}`, {
      key,
      headers: { 'if-match': '"7"' },
      body: { name: 'renamed' },
    });
    expect(stale.status).toBe(412);
    const moved = await t.rest('PATCH', `/api/v1/assets/connections/${c.id}`, {
      key,
      headers: { 'if-match': '"1"' },
      body: { name: 'renamed', config: { bucket: 'missing' }, secrets: { secret_access_key: 'S3RVER' } },
    });
    expect(moved.status).toBe(200);
    expect(moved.headers.get('etag')).toBe('"2"');
    expect(moved.body.data).toMatchObject({ name: 'renamed', revision: 2, status: 'unverified', has_secret_access_key: true });
    expect(moved.body.data.config).toMatchObject({ bucket: 'missing', prefix: 'photos/', endpoint });
    expect(JSON.stringify(moved.body)).not.toContain('"secret_access_key"');
    const verifyBad = await t.rest('POST', `/api/v1/assets/connections/${c.id}/verify`, { key });
    expect(verifyBad.status).toBe(422);
    expect(verifyBad.body.error.code).toBe('assets.connection_verification_failed');
    expect((await t.rest('GET', `/api/v1/assets/connections/${c.id}`, { key })).body.data).toMatchObject({
      status: 'failed',
      last_error: expect.stringContaining('NoSuchBucket'),
    });
    const back = await t.rest('PATCH', `/api/v1/assets/connections/${c.id}`, { key, body: { config: { bucket: 'source' } } });
    expect(back.body.data.revision).toBe(3);
    expect((await t.rest('PATCH', `/api/v1/assets/connections/${c.id}`, { key, body: { config: { bucket: 7 } } })).status).toBe(
      400,
    );
    const verified = await t.rest('POST', `/api/v1/assets/connections/${c.id}/verify`, { key });
    expect(verified.status).toBe(200);
    expect(verified.body.data).toMatchObject({ status: 'verified', last_error: null });

    // The migration: a 202 job, every object copied once, checksums kept.
    const bucket = (await t.rest('POST', '/api/v1/assets/buckets', { key, body: { name: 'imported' } })).body.data;
    const started = await t.rest('POST', '/api/v1/assets/migrations', { key, body: { connection: c.id, bucket: bucket.id } });
    expect(started.status).toBe(202);
    expect(started.body.data).toMatchObject({
      id: expect.any(String),
      job_id: started.body.data.id,
      status: 'queued',
      status_url: `${t.bridgeUrl}/api/v1/assets/jobs/${started.body.data.id}`,
    });
    const m = await waitFor(key, started.body.data.id, ended);
    expect(m).toMatchObject({ status: 'succeeded', counts: { total: 5, copied: 5, failed: 0, pending: 0 } });
    const assets = (await t.rest('GET', `/api/v1/assets?bucket=${bucket.id}&sort=key&direction=asc`, { key })).body.data;
    expect(assets.total).toBe(5);
    expect(assets.assets.map((a: any) => [a.key, a.checksum])).toEqual(Object.entries(objects).map(([k, v]) => [k, sha(v)]));

    // The report: raw JSON by default, CSV by Accept or ?format=csv.
    const raw = await fetch(`${t.bridgeUrl}/api/v1/assets/migrations/${m.id}/report`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(raw.status).toBe(200);
    const report = (await raw.json()) as any;
    expect(report.success).toBeUndefined();
    expect(report.migration).toMatchObject({ id: m.id, status: 'succeeded' });
    expect(report.items).toHaveLength(5);
    expect(report.items[0]).toMatchObject({
      source_key: 'photos/p0.txt',
      status: 'copied',
      sha256: sha(objects['photos/p0.txt']),
      attempts: 1,
    });
    for (const q of ['?format=csv', '']) {
      const csv = await fetch(`${t.bridgeUrl}/api/v1/assets/migrations/${m.id}/report${q}`, {
        headers: { authorization: `Bearer ${key}`, accept: 'text/csv' },
      });
      expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
      expect(csv.headers.get('content-disposition')).toContain('attachment');
      const lines = (await csv.text()).trim().split('\r\n');
      expect(lines[0]).toBe(
        'item_id,source_key,key,status,size,sha256,source_etag,asset_id,attempts,error_code,error_message,copied_at',
      );
      expect(lines).toHaveLength(6);
    }
    const bad = await fetch(`${t.bridgeUrl}/api/v1/assets/migrations/${m.id}/report?format=xml`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(bad.status).toBe(400);
    expect((await fetch(`${t.bridgeUrl}/api/v1/assets/migrations/${m.id}/report`)).status).toBe(401);
    const other = await t.createKey();
    const hidden = await fetch(`${t.bridgeUrl}/api/v1/assets/migrations/${m.id}/report`, {
      headers: { authorization: `Bearer ${other.key}` },
    });
    expect(hidden.status).toBe(404);
    expect((await t.rest('GET', `/api/v1/assets/migrations/${m.id}`, { key: other.key })).status).toBe(404);

    // Ended: no cancel; copied items are not retried; the list shows it.
    expect((await t.rest('POST', `/api/v1/assets/migrations/${m.id}/cancel`, { key })).status).toBe(409);
    const retryCopied = await t.rest('POST', `/api/v1/assets/migrations/${m.id}/items/${report.items[0].item_id}/retry`, { key });
    expect(retryCopied.status).toBe(409);
    expect(retryCopied.body.error.code).toBe('assets.migration_item_not_retryable');
    expect((await t.rest('POST', `/api/v1/assets/migrations/${m.id}/items/nope/retry`, { key })).status).toBe(404);
    const ms = await t.rest('GET', '/api/v1/assets/migrations?limit=10', { key });
    expect(ms.body.data).toMatchObject({ items: [{ id: m.id }], next_cursor: '' });

    // Running it again copies nothing twice: every key exists, each item fails on its own.
    const again = await t.rest('POST', '/api/v1/assets/migrations', { key, body: { connection: c.id, bucket: bucket.id } });
    const m2 = await waitFor(key, again.body.data.id, ended);
    expect(m2).toMatchObject({ status: 'completed_with_errors', counts: { copied: 0, failed: 5 } });
    expect((await t.rest('GET', `/api/v1/assets?bucket=${bucket.id}`, { key })).body.data.total).toBe(5);

    const del = await t.rest('DELETE', `/api/v1/assets/connections/${c.id}`, { key });
    expect(del.status).toBe(200);
    expect((await t.rest('DELETE', `/api/v1/assets/connections/${c.id}`, { key })).status).toBe(404);
    expect((await t.rest('POST', `/api/v1/assets/connections/${c.id}/verify`, { key })).status).toBe(404);
    expect((await t.rest('POST', '/api/v1/assets/migrations', { key, body: { connection: c.id } })).status).toBe(404);
  });

  it('HTTP origin: manifest checksums, a failed item retried, a cancelled migration', async () => {
    const { key } = await t.createKey();
    files['good.txt'] = 'good bytes';
    files['flaky.txt'] = 'flaky bytes';
    files['lying.txt'] = 'these bytes differ from the manifest';
    files['manifest.json'] = JSON.stringify({
      objects: [
        { key: 'good.txt', sha256: sha('good bytes') },
        { key: 'flaky.txt' },
        { key: 'lying.txt', sha256: sha('something else') },
      ],
    });
    failOnce.add('flaky.txt');
    const created = await t.rest('POST', '/api/v1/assets/connections', {
      key,
      body: { name: 'origin', type: 'http', config: { base_url: originUrl }, secrets: { bearer_token: 'origin-token' } },
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({
      has_bearer_token: true,
      config: { base_url: originUrl, manifest_path: 'manifest.json' },
    });
    expect(JSON.stringify(created.body)).not.toContain('origin-token');
    const c = created.body.data;
    expect((await t.rest('POST', `/api/v1/assets/connections/${c.id}/verify`, { key })).status).toBe(200);

    const started = await t.rest('POST', '/api/v1/assets/migrations', { key, body: { connection: c.id, folder: 'web' } });
    const m = await waitFor(key, started.body.data.id, ended);
    expect(m).toMatchObject({ status: 'completed_with_errors', counts: { total: 3, copied: 1, failed: 2 } });
    const report = (await (
      await fetch(`${t.bridgeUrl}/api/v1/assets/migrations/${m.id}/report`, { headers: { authorization: `Bearer ${key}` } })
    ).json()) as any;
    const byKey = Object.fromEntries(report.items.map((i: any) => [i.source_key, i]));
    expect(byKey['good.txt']).toMatchObject({ status: 'copied', key: 'web/good.txt', sha256: sha('good bytes') });
    expect(byKey['lying.txt']).toMatchObject({ status: 'failed', error_code: 'assets.checksum_mismatch' });
    expect(byKey['flaky.txt']).toMatchObject({ status: 'failed', error_code: 'assets.connection_unreachable' });

    const retried = await t.rest('POST', `/api/v1/assets/migrations/${m.id}/items/${byKey['flaky.txt'].item_id}/retry`, { key });
    expect(retried.status).toBe(202);
    expect(retried.body.data).toMatchObject({ status: 'pending' });
    const after = await waitFor(key, m.id, (x) => ended(x) && x.counts.copied === 2);
    expect(after).toMatchObject({ status: 'completed_with_errors', counts: { copied: 2, failed: 1 } });

    // A slow origin: cancelled mid-way, the rest is never copied.
    slowMs = 300;
    files['manifest.json'] = JSON.stringify({ objects: Array.from({ length: 24 }, (_, i) => ({ key: `slow/${i}.txt` })) });
    for (let i = 0; i < 24; i++) files[`slow/${i}.txt`] = `slow ${i}`;
    const slow = (await t.rest('POST', '/api/v1/assets/migrations', { key, body: { connection: c.id, folder: 'slow-run' } })).body
      .data;
    await waitFor(key, slow.id, (x) => x.counts.copied >= 1);
    const cancelled = await t.rest('POST', `/api/v1/assets/migrations/${slow.id}/cancel`, { key });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data.status).toBe('cancelled');
    await new Promise((r) => setTimeout(r, 800));
    const final = (await t.rest('GET', `/api/v1/assets/migrations/${slow.id}`, { key })).body.data;
    expect(final.status).toBe('cancelled');
    expect(final.counts.copied).toBeLessThan(24);
    expect(final.counts.cancelled).toBeGreaterThan(0);
    expect(final.counts.pending).toBe(0);
    const cancelledItem = (
      (await (
        await fetch(`${t.bridgeUrl}/api/v1/assets/migrations/${slow.id}/report`, { headers: { authorization: `Bearer ${key}` } })
      ).json()) as any
    ).items.find((i: any) => i.status === 'cancelled');
    const refused = await t.rest('POST', `/api/v1/assets/migrations/${slow.id}/items/${cancelledItem.item_id}/retry`, { key });
    expect(refused.status).toBe(409);
    slowMs = 0;
  });

  it('refuses missing keys, read-only writers and unknown connections', async () => {
    expect((await t.rest('GET', '/api/v1/assets/connections')).status).toBe(401);
    expect((await t.rest('GET', '/api/v1/assets/migrations')).status).toBe(401);
    const ro = await t.createKey({ role: 'read_only' });
    expect((await t.rest('GET', '/api/v1/assets/connections', { key: ro.key })).status).toBe(200);
    const body = { name: 'x', type: 'http', config: { base_url: originUrl } };
    expect((await t.rest('POST', '/api/v1/assets/connections', { key: ro.key, body })).status).toBe(403);
    const { key } = await t.createKey();
    expect((await t.rest('POST', '/api/v1/assets/migrations', { key, body: { connection: 'nope' } })).status).toBe(404);
    expect((await t.rest('GET', '/api/v1/assets/migrations/nope', { key })).status).toBe(404);
    expect((await t.rest('POST', '/api/v1/assets/migrations/nope/cancel', { key })).status).toBe(404);
    const wrongType = await t.rest('POST', '/api/v1/assets/connections', { key, body: { ...body, type: 'ftp' } });
    expect(wrongType.status).toBe(400);
    const plainHttp = await t.rest('POST', '/api/v1/assets/connections', {
      key,
      body: { ...body, config: { base_url: 'http://example.com/' } },
    });
    expect(plainHttp.status).toBe(400);
    expect(plainHttp.body.error.code).toBe('assets.unsafe_url');
  });
});
