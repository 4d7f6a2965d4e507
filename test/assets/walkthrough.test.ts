import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/** The assets walkthrough through the real bridge, router, subgraph and CDN listener. */
describe('assets through the bridge', () => {
  let t: TestPlatform;
  let blobDir: string;
  let cdnUrl: string;
  beforeAll(async () => {
    blobDir = await mkdtemp(path.join(tmpdir(), 'assets-e2e-'));
    t = await startTestPlatform({ ASSETS_BLOB_DIR: blobDir, ASSETS_DELETE_DELAY_MS: '100' });
    cdnUrl = t.platform.cdnUrl!;
  });
  afterAll(async () => {
    await t.stop();
    await rm(blobDir, { recursive: true, force: true });
  });

  const upload = async (key: string, body: string | Buffer, fields: Record<string, string> = {}, name = 'hello.txt') => {
    const fd = new FormData();
    for (const [k, v] of Object.entries(fields)) fd.append(k, v);
    fd.append('file', new Blob([body]), name);
    const res = await fetch(`${t.bridgeUrl}/api/v1/assets/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    });
    return { status: res.status, etag: res.headers.get('etag'), body: (await res.json()) as any };
  };
  const cdn = (u: string) => u.replace(/^https?:\/\/[^/]+/, cdnUrl);

  it('upload → list → get → patch → signed URL → CDN → delete job', async () => {
    const { key } = await t.createKey();
    const up = await upload(key, 'hello world', { key: 'docs/hello.txt', visibility: 'public', metadata: '{"team":"a"}' });
    expect(up.status).toBe(201);
    const asset = up.body.data;
    expect(asset).toMatchObject({
      key: 'docs/hello.txt',
      mime_type: 'text/plain',
      checksum_sha256: createHash('sha256').update('hello world').digest('hex'),
      status: 'ready',
      revision: 1,
    });
    expect(up.etag).toBe('"1"');

    const list = await t.rest('GET', '/api/v1/assets?prefix=docs/&sort=key&direction=asc', { key });
    expect(list.status).toBe(200);
    expect(list.body).toEqual({
      success: true,
      data: { assets: [expect.objectContaining({ id: asset.id })], total: 1, next_cursor: '' },
    });

    const one = await t.rest('GET', `/api/v1/assets/${asset.id}`, { key });
    expect(one.status).toBe(200);
    expect(one.headers.get('etag')).toBe('"1"');

    expect((await t.rest('PATCH', `/api/v1/assets/${asset.id}`, { key, body: { visibility: 'private' } })).status).toBe(428);
    const stale = await t.rest('PATCH', `/api/v1/assets/${asset.id}`, {
      key,
      body: { visibility: 'private' },
      headers: { 'if-match': '"5"' },
    });
    expect(stale.status).toBe(412);
    expect(stale.body.error.code).toBe('assets.revision_mismatch');
    const patched = await t.rest('PATCH', `/api/v1/assets/${asset.id}`, {
      key,
      body: { cache_control: 'public, max-age=60' },
      headers: { 'if-match': '"1"' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ cache_control: 'public, max-age=60', revision: 2 });
    expect(patched.headers.get('etag')).toBe('"2"');

    const pub = await fetch(cdn(patched.body.data.url));
    expect(pub.status).toBe(200);
    expect(pub.headers.get('cache-control')).toBe('public, max-age=60');
    expect(await pub.text()).toBe('hello world');

    const signed = await t.rest('POST', `/api/v1/assets/${asset.id}/signed-url`, {
      key,
      body: { expires_in: 60, max_downloads: 2 },
    });
    expect(signed.status).toBe(201);
    const url = cdn(signed.body.data.url);
    expect((await fetch(url)).status).toBe(200);
    expect((await fetch(url)).status).toBe(200);
    expect((await fetch(url)).status).toBe(404);

    const del = await t.rest('DELETE', `/api/v1/assets/${asset.id}`, { key, headers: { 'if-match': '"2"' } });
    expect(del.status).toBe(202);
    expect(del.body.data).toMatchObject({
      job_id: expect.any(String),
      status: 'queued',
      status_url: expect.stringContaining('/api/v1/assets/jobs/'),
    });
    const deadline = Date.now() + 15_000;
    let job: any;
    do {
      await new Promise((r) => setTimeout(r, 100));
      job = (await t.rest('GET', `/api/v1/assets/jobs/${del.body.data.job_id}`, { key })).body.data;
    } while (job.status !== 'succeeded' && Date.now() < deadline);
    expect(job.status).toBe('succeeded');
    expect((await t.rest('GET', `/api/v1/assets/${asset.id}`, { key })).status).toBe(404);
    expect((await fetch(cdn(patched.body.data.url))).status).toBe(404);
  });

  it('buckets and policy: revision-guarded bucket changes, policy read and write, scopes, other accounts see 404', async () => {
    const { key } = await t.createKey();
    const created = await t.rest('POST', '/api/v1/assets/buckets', {
      key,
      body: { name: 'media', default_visibility: 'public', replication_policy: { regions: ['local-2'] } },
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({
      name: 'media',
      home_region: 'local-1',
      revision: 1,
      replication_policy: { regions: ['local-2'] },
    });
    const b = created.body.data;
    expect((await t.rest('PUT', `/api/v1/assets/buckets/${b.id}`, { key, body: { cache_control: 'no-cache' } })).status).toBe(
      428,
    );
    expect(
      (
        await t.rest('PUT', `/api/v1/assets/buckets/${b.id}`, {
          key,
          body: { cache_control: 'no-cache' },
          headers: { 'if-match': '"3"' },
        })
      ).status,
    ).toBe(412);
    const upd = await t.rest('PUT', `/api/v1/assets/buckets/${b.id}`, {
      key,
      body: { cache_control: 'no-cache' },
      headers: { 'if-match': '"1"' },
    });
    expect(upd.status).toBe(200);
    expect(upd.body.data).toMatchObject({ cache_control: 'no-cache', revision: 2 });
    expect((await t.rest('GET', '/api/v1/assets/buckets', { key })).body.data).toHaveLength(1);
    expect((await t.rest('POST', '/api/v1/assets/buckets', { key, body: { name: 'media', extra: 1 } })).status).toBe(400);

    const pol = await t.rest('PUT', '/api/v1/assets/policy', {
      key,
      body: { allowed_mime_types: ['image/*'], require_scan: true },
    });
    expect(pol.status).toBe(200);
    expect((await t.rest('GET', '/api/v1/assets/policy', { key })).body.data).toMatchObject({
      allowed_mime_types: ['image/*'],
      require_scan: true,
    });
    const refused = await upload(key, 'plain text', { bucket: b.id });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('assets.policy_violation');
    await t.rest('PUT', '/api/v1/assets/policy', { key, body: {} });

    const up = await upload(key, 'replicated', { bucket: b.id });
    expect(up.body.data).toMatchObject({ visibility: 'public', replication_status: 'pending' });
    const deadline = Date.now() + 10_000;
    let rep = '';
    while (Date.now() < deadline && rep !== 'replicated') {
      await new Promise((r) => setTimeout(r, 100));
      rep = (await t.rest('GET', `/api/v1/assets/${up.body.data.id}`, { key })).body.data.replication_status;
    }
    expect(rep).toBe('replicated');

    const other = await t.createKey();
    expect((await t.rest('GET', `/api/v1/assets/${up.body.data.id}`, { key: other.key })).status).toBe(404);
    expect(
      (await t.rest('PUT', `/api/v1/assets/buckets/${b.id}`, { key: other.key, body: {}, headers: { 'if-match': '"2"' } }))
        .status,
    ).toBe(404);
    const reader = await t.createKey({ scopes: ['assets:read'] });
    expect((await t.rest('GET', '/api/v1/assets', { key: reader.key })).status).toBe(200);
    const denied = await t.rest('POST', '/api/v1/assets/buckets', { key: reader.key, body: { name: 'x' } });
    expect(denied.status).toBe(403);
    expect((await upload(reader.key, 'x')).status).toBe(403);
    expect((await t.rest('GET', '/api/v1/assets')).status).toBe(401);
  });

  it('upload sessions through the bridge: Idempotency-Key, legacy camelCase alias, parts, GET, complete, DELETE', async () => {
    const { key } = await t.createKey();
    const file = Buffer.alloc(1024 * 1024 + 7, 7);
    const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    const body = {
      mode: 'chunked',
      file_name: 'big.bin',
      file_size: file.length,
      part_size: 1024 * 1024,
      checksum_sha256: sha(file),
    };
    const created = await t.rest('POST', '/api/v1/assets/upload-sessions', { key, body, headers: { 'idempotency-key': 'k-1' } });
    if (created.status !== 201) throw new Error(JSON.stringify(created.body));
    const s = created.body.data;
    expect(s).toMatchObject({
      upload_session_id: expect.any(String),
      session_id: s.upload_session_id,
      url: expect.any(String),
      part_size: 1048576,
      max_bytes: file.length,
    });
    const replay = await t.rest('POST', '/api/v1/assets/upload-sessions', { key, body, headers: { 'idempotency-key': 'k-1' } });
    expect(replay.body.data.upload_session_id).toBe(s.upload_session_id);
    const conflict = await t.rest('POST', '/api/v1/assets/upload-sessions', {
      key,
      body: { ...body, file_name: 'x' },
      headers: { 'idempotency-key': 'k-1' },
    });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.code).toBe('assets.idempotency_conflict');

    for (const n of [2, 1]) {
      const part = file.subarray((n - 1) * 1048576, n * 1048576);
      const res = await fetch(`${s.url}/parts/${n}`, { method: 'PUT', body: part, headers: { 'x-content-sha256': sha(part) } });
      expect(res.status).toBe(200);
    }
    const read = await t.rest('GET', `/api/v1/assets/upload-sessions/${s.upload_session_id}`, { key });
    expect(read.body.data.parts.map((p: any) => p.part_number)).toEqual([1, 2]);
    const done = await t.rest('POST', `/api/v1/assets/upload-sessions/${s.upload_session_id}/complete`, { key });
    expect(done.status).toBe(201);
    expect(done.body.data).toMatchObject({ checksum_sha256: sha(file), size: file.length, status: 'ready' });

    const legacy = await t.rest('POST', '/api/v1/assets/upload-url', { key, body: { fileName: 'a.txt', fileSize: 3 } });
    expect(legacy.status).toBe(201);
    expect(legacy.body.data).toMatchObject({ mode: 'single', session_id: null });
    const cancelled = await t.rest('DELETE', `/api/v1/assets/upload-sessions/${legacy.body.data.upload_session_id}`, { key });
    expect(cancelled.body.data.status).toBe('cancelled');
  });

  it('browser uploads: /upload-capabilities gives a token that /assets/widget takes instead of the key', async () => {
    const { key } = await t.createKey();
    const cap = await t.rest('POST', '/api/v1/assets/upload-capabilities', { key, body: { folder: 'widget', expires_in: 60 } });
    expect(cap.status).toBe(201);
    expect(cap.body.data).toMatchObject({ token: expect.any(String), upload_url: `${t.bridgeUrl}/assets/widget` });
    const send = (headers: Record<string, string>) => {
      const fd = new FormData();
      fd.append('file', new Blob(['from a browser']), 'w.txt');
      return fetch(`${t.bridgeUrl}/assets/widget`, { method: 'POST', headers, body: fd });
    };
    const ok = await send({ 'x-upload-capability': cap.body.data.token });
    expect(ok.status).toBe(201);
    expect(((await ok.json()) as any).data).toMatchObject({ key: 'widget/w.txt', folder: 'widget' });
    expect((await send({ 'x-upload-capability': `${cap.body.data.token}x` })).status).toBe(401);
    expect((await send({})).status).toBe(401);
  });
});
