import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTestPlatform, uniqueName, type TestPlatform } from '../support/platform';

/**
 * Object-store buckets and their operations (decision 0029) through the real bridge,
 * router, Assets subgraph, kernel operation engine and CDN listener.
 */
let t: TestPlatform;
let blobDir: string;
let cdnUrl: string;
beforeAll(async () => {
  blobDir = await mkdtemp(path.join(tmpdir(), 'bucket-ops-'));
  t = await startTestPlatform({ ASSETS_BLOB_DIR: blobDir, ASSETS_DELETE_DELAY_MS: '100' });
  cdnUrl = t.platform.cdnUrl!;
});
afterAll(async () => {
  await t.stop();
  await rm(blobDir, { recursive: true, force: true });
});

const sha = (b: string | Buffer) => createHash('sha256').update(b).digest('hex');
const blobPath = (region: string, hex: string) => path.join(blobDir, region, 'blobs', hex.slice(0, 2), hex);

async function upload(key: string, bucket: string, objectKey: string, body: string, fields: Record<string, string> = {}) {
  const fd = new FormData();
  fd.append('bucket', bucket);
  fd.append('key', objectKey);
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  fd.append('file', new Blob([body]), path.basename(objectKey) || 'file.txt');
  const res = await fetch(`${t.bridgeUrl}/api/v1/assets/upload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: fd,
  });
  const json = (await res.json()) as any;
  if (res.status !== 201) throw new Error(`upload ${objectKey}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

async function objstoreBucket(opts: Record<string, unknown> = {}) {
  const { key, accountId } = await t.createKey({ plan: 'pro' });
  const res = await t.rest('POST', '/api/v1/assets/objstore-buckets', {
    key,
    body: { name: uniqueName('ob'), default_visibility: 'public', ...opts },
  });
  expect(res.status).toBe(201);
  return { key, accountId, bucket: res.body.data };
}

async function waitFor<T>(fn: () => Promise<T | null | undefined | false>, ms = 20_000, what = 'condition'): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('object-store buckets (spec 4.3)', () => {
  it('create answers 201 with ETag; list holds object-store buckets only; duplicate 409; unknown region 422', async () => {
    const { key, bucket } = await objstoreBucket();
    expect(bucket).toMatchObject({ id: expect.any(String), revision: 1, home_region: 'local-1', default_visibility: 'public' });
    const plain = await t.rest('POST', '/api/v1/assets/buckets', { key, body: { name: uniqueName('plain') } });
    expect(plain.status).toBe(201);
    const list = await t.rest('GET', '/api/v1/assets/objstore-buckets', { key });
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ success: true, data: [expect.objectContaining({ id: bucket.id, name: bucket.name })] });
    const dup = await t.rest('POST', '/api/v1/assets/objstore-buckets', { key, body: { name: bucket.name } });
    expect(dup.status).toBe(409);
    const region = await t.rest('POST', '/api/v1/assets/objstore-buckets', {
      key,
      body: { name: uniqueName('r'), home_region: 'mars-1' },
    });
    expect(region.status).toBe(422);
    expect(region.body.success).toBe(false);
    const other = await t.createKey();
    expect((await t.rest('GET', '/api/v1/assets/objstore-buckets', { key: other.key })).body.data).toEqual([]);
    expect((await t.rest('GET', '/api/v1/assets/objstore-buckets')).status).toBe(401);
  });

  it('storage needs the current revision: 428 without, 412 stale, 200 with If-Match or body revision; 404 for others', async () => {
    const { key, bucket } = await objstoreBucket();
    const p = `/api/v1/assets/buckets/${bucket.id}/storage`;
    const missing = await t.rest('PUT', p, { key, body: { versioning: false } });
    expect(missing.status).toBe(428);
    const stale = await t.rest('PUT', p, { key, body: { versioning: false }, headers: { 'if-match': '"7"' } });
    expect(stale.status).toBe(412);
    expect(stale.body.error.details).toEqual({ current_revision: 1 });
    const ok = await t.rest('PUT', p, { key, body: { versioning: false, max_bytes: 1024 }, headers: { 'if-match': '"1"' } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('etag')).toBe('"2"');
    expect(ok.body.data).toMatchObject({ versioning: false, max_bytes: 1024, revision: 2 });
    const byBody = await t.rest('PUT', p, { key, body: { revision: 2, retention_days: 30 } });
    expect(byBody.status).toBe(200);
    expect(byBody.body.data).toMatchObject({ retention_days: 30, revision: 3 });
    const staleBody = await t.rest('PUT', p, { key, body: { revision: 2, retention_days: 1 } });
    expect(staleBody.status).toBe(412);
    const badRegion = await t.rest('PUT', p, {
      key,
      body: { replication_policy: { regions: ['nowhere'] } },
      headers: { 'if-match': '"3"' },
    });
    expect(badRegion.status).toBe(422);
    const other = await t.createKey();
    expect((await t.rest('PUT', p, { key: other.key, body: {}, headers: { 'if-match': '"3"' } })).status).toBe(404);
    // A plain Assets bucket is not an object-store bucket.
    const plain = await t.rest('POST', '/api/v1/assets/buckets', { key, body: { name: uniqueName('plain') } });
    const notObj = await t.rest('PUT', `/api/v1/assets/buckets/${plain.body.data.id}/storage`, {
      key,
      body: {},
      headers: { 'if-match': '"1"' },
    });
    expect(notObj.status).toBe(404);
  });
});

describe('relocation (spec 4.3)', () => {
  it('copies the bytes into the other region root, verifies, switches; objects stay readable throughout', async () => {
    const { key, bucket } = await objstoreBucket();
    const bodies = Array.from({ length: 12 }, (_, i) => `object ${i} `.repeat(200 + i));
    const assets = [];
    for (let i = 0; i < bodies.length; i++) assets.push(await upload(key, bucket.id, `data/${i}.txt`, bodies[i]));
    for (const b of bodies) expect((await readFile(blobPath('local-1', sha(b)))).toString()).toBe(b);

    const same = await t.rest('POST', `/api/v1/assets/buckets/${bucket.id}/relocations`, { key, body: { region: 'local-1' } });
    expect(same.status).toBe(422);
    const unknown = await t.rest('POST', `/api/v1/assets/buckets/${bucket.id}/relocations`, { key, body: { region: 'mars-1' } });
    expect(unknown.status).toBe(422);
    const other = await t.createKey();
    const foreign = await t.rest('POST', `/api/v1/assets/buckets/${bucket.id}/relocations`, {
      key: other.key,
      body: { region: 'local-2' },
    });
    expect(foreign.status).toBe(404);

    // Readers hammer the CDN while the job runs: every answer is the object's bytes.
    let reading = true;
    let reads = 0;
    const failures: string[] = [];
    const reader = (async () => {
      while (reading) {
        for (let i = 0; i < assets.length && reading; i++) {
          const res = await fetch(assets[i].url.replace(/^https?:\/\/[^/]+/, cdnUrl));
          const text = await res.text();
          reads++;
          if (res.status !== 200 || text !== bodies[i]) failures.push(`${i}: ${res.status}`);
        }
      }
    })();

    const started = await t.rest('POST', `/api/v1/assets/buckets/${bucket.id}/relocations`, { key, body: { region: 'local-2' } });
    expect(started.status).toBe(202);
    expect(started.body.data).toMatchObject({
      id: expect.any(String),
      bucket_id: bucket.id,
      from_region: 'local-1',
      to_region: 'local-2',
      status: 'queued',
      status_url: expect.stringContaining(`/api/v1/assets/buckets/${bucket.id}/relocations/`),
    });
    const second = await t.rest('POST', `/api/v1/assets/buckets/${bucket.id}/relocations`, { key, body: { region: 'local-2' } });
    // Still running → 409; already done → the bucket is in local-2 → 422.
    expect([409, 422]).toContain(second.status);
    const relId = started.body.data.id;
    const done = await waitFor(
      async () => {
        const r = await t.rest('GET', `/api/v1/assets/buckets/${bucket.id}/relocations/${relId}`, { key });
        expect(r.status).toBe(200);
        return r.body.data.status === 'succeeded' || r.body.data.status === 'failed' ? r.body.data : null;
      },
      30_000,
      'relocation',
    );
    reading = false;
    await reader;
    expect(done).toMatchObject({ status: 'succeeded', objects_total: 12, objects_copied: 12, objects_switched: 12 });
    expect(done.bytes_copied).toBe(bodies.reduce((n, b) => n + Buffer.byteLength(b), 0));
    expect(failures).toEqual([]);
    expect(reads).toBeGreaterThan(0);

    // The bytes are in the new root; the records and the bucket point there.
    for (const b of bodies) expect((await readFile(blobPath('local-2', sha(b)))).toString()).toBe(b);
    const svc = t.platform.services.assets as any;
    const moved = await svc.assets.m.Asset.find({ bucketId: bucket.id }).lean();
    expect(moved.map((a: any) => a.homeRegion)).toEqual(Array(12).fill('local-2'));
    const list = await t.rest('GET', '/api/v1/assets/objstore-buckets', { key });
    expect(list.body.data[0]).toMatchObject({ home_region: 'local-2', revision: 2 });
    // New uploads land in the new root.
    await upload(key, bucket.id, 'data/after.txt', 'written after the move');
    expect((await readFile(blobPath('local-2', sha('written after the move')))).toString()).toBe('written after the move');
    const after = await fetch(assets[3].url.replace(/^https?:\/\/[^/]+/, cdnUrl));
    expect(await after.text()).toBe(bodies[3]);
    const foreignGet = await t.rest('GET', `/api/v1/assets/buckets/${bucket.id}/relocations/${relId}`, { key: other.key });
    expect(foreignGet.status).toBe(404);
  }, 60_000);
});

describe('website mode on the CDN', () => {
  it('serves the index object for / and folders, the error object with 404, nothing private; off = plain 404', async () => {
    const { key, bucket } = await objstoreBucket();
    const web = `/api/v1/buckets/${bucket.id}/website`;
    expect((await t.rest('GET', web, { key })).body.data).toMatchObject({ enabled: false, index_object: null, url: null });
    await upload(key, bucket.id, 'index.html', '<h1>home</h1>');
    await upload(key, bucket.id, 'docs/index.html', '<h1>docs</h1>');
    await upload(key, bucket.id, '404.html', '<h1>not here</h1>');
    await upload(key, bucket.id, 'secret.txt', 'private bytes', { visibility: 'private' });
    const put = await t.rest('PUT', web, { key, body: { enabled: true, error_object: '404.html' } });
    expect(put.status).toBe(200);
    expect(put.body.data).toMatchObject({
      bucket_id: bucket.id,
      enabled: true,
      index_object: 'index.html',
      error_object: '404.html',
      url: `${cdnUrl}/w/${bucket.id}/`,
    });
    const get = async (p: string) => {
      const res = await fetch(`${cdnUrl}/w/${bucket.id}/${p}`);
      return { status: res.status, text: await res.text() };
    };
    expect(await get('')).toEqual({ status: 200, text: '<h1>home</h1>' });
    expect(await get('docs/')).toEqual({ status: 200, text: '<h1>docs</h1>' });
    expect(await get('docs/index.html')).toEqual({ status: 200, text: '<h1>docs</h1>' });
    expect(await get('missing.html')).toEqual({ status: 404, text: '<h1>not here</h1>' });
    expect(await get('secret.txt')).toEqual({ status: 404, text: '<h1>not here</h1>' });
    const off = await t.rest('PUT', web, { key, body: { enabled: false } });
    expect(off.body.data.enabled).toBe(false);
    await new Promise((r) => setTimeout(r, 1100)); // the CDN's ~1 s cache of the settings
    expect((await get('')).status).toBe(404);
    const other = await t.createKey();
    expect((await t.rest('GET', web, { key: other.key })).status).toBe(404);
    expect((await t.rest('PUT', web, { key: other.key, body: { enabled: true } })).status).toBe(404);
  });
});

describe('access logs and analytics', () => {
  it('CDN and upload requests become log entries and day counters (batched, after the response)', async () => {
    const { key, bucket } = await objstoreBucket();
    const a = await upload(key, bucket.id, 'img/cat.txt', 'meow');
    await upload(key, bucket.id, 'img/dog.txt', 'woof woof');
    await upload(key, bucket.id, 'top.txt', 'top');
    for (let i = 0; i < 3; i++) expect((await fetch(a.url.replace(/^https?:\/\/[^/]+/, cdnUrl))).status).toBe(200);
    await t.rest('PUT', `/api/v1/buckets/${bucket.id}/website`, { key, body: { enabled: true } });
    expect((await fetch(`${cdnUrl}/w/${bucket.id}/nothing/here.txt`)).status).toBe(404);

    const logs = await waitFor(
      async () => {
        const r = await t.rest('GET', `/api/v1/buckets/${bucket.id}/access-logs?limit=100`, { key });
        expect(r.status).toBe(200);
        return r.body.data.items.length >= 7 ? r.body.data : null;
      },
      10_000,
      'access logs',
    );
    const gets = logs.items.filter((e: any) => e.operation === 'get_object');
    expect(gets.length).toBe(4);
    expect(gets.find((e: any) => e.key === 'img/cat.txt')).toMatchObject({
      status: 200,
      bytes_out: 4,
      bytes_in: 0,
      request_id: expect.any(String),
      access_key_id: null,
      time: expect.any(String),
    });
    expect(gets.find((e: any) => e.status === 404)).toMatchObject({ key: 'nothing/here.txt' });
    const puts = logs.items.filter((e: any) => e.operation === 'put_object');
    expect(puts.map((e: any) => e.key).sort()).toEqual(['img/cat.txt', 'img/dog.txt', 'top.txt']);
    for (const p of puts) {
      expect(p.status).toBe(201);
      expect(p.bytes_in).toBeGreaterThan(0);
      expect(p.access_key_id).toEqual(expect.any(String));
    }
    // Paging: newest first with a cursor.
    const page1 = await t.rest('GET', `/api/v1/buckets/${bucket.id}/access-logs?limit=4`, { key });
    expect(page1.body.data.items).toHaveLength(4);
    const page2 = await t.rest('GET', `/api/v1/buckets/${bucket.id}/access-logs?limit=4&cursor=${page1.body.data.next_cursor}`, {
      key,
    });
    expect(page2.body.data.items.length).toBe(3);
    expect(new Set([...page1.body.data.items, ...page2.body.data.items].map((e: any) => e.id)).size).toBe(7);

    const an = await t.rest('GET', `/api/v1/buckets/${bucket.id}/analytics`, { key });
    expect(an.status).toBe(200);
    const d = an.body.data;
    expect(d).toMatchObject({
      bucket_id: bucket.id,
      object_count: 3,
      stored_bytes: 4 + 9 + 3,
      requests: 7,
      errors: 1,
    });
    expect(d.bytes_out).toBeGreaterThan(12);
    expect(d.bytes_in).toBeGreaterThan(16);
    expect(d.bandwidth_bytes).toBe(d.bytes_in + d.bytes_out);
    expect(d.top_prefixes[0]).toEqual({ prefix: 'img/', requests: 5 });
    expect(new Date(d.end).getTime() - new Date(d.start).getTime()).toBeGreaterThanOrEqual(30 * 86_400_000 - 1000);
    const later = await t.rest(
      'GET',
      `/api/v1/buckets/${bucket.id}/analytics?start=${encodeURIComponent(new Date(Date.now() + 86_400_000).toISOString())}`,
      {
        key,
      },
    );
    expect(later.status).toBe(422);
    const badStart = await t.rest('GET', `/api/v1/buckets/${bucket.id}/analytics?start=yesterday`, { key });
    expect(badStart.status).toBe(400);
    const other = await t.createKey();
    expect((await t.rest('GET', `/api/v1/buckets/${bucket.id}/analytics`, { key: other.key })).status).toBe(404);
    expect((await t.rest('GET', `/api/v1/buckets/${bucket.id}/access-logs`, { key: other.key })).status).toBe(404);
  });
});

describe('inventory exports and the bounded query', () => {
  it('CSV and JSONL files with a row count, optional prefix, downloadable by the owner only', async () => {
    const { key, bucket } = await objstoreBucket();
    await upload(key, bucket.id, 'a/one.txt', '1');
    await upload(key, bucket.id, 'a/two,"quoted".txt', '22');
    await upload(key, bucket.id, 'b/three.txt', '333');
    const start = async (body: Record<string, unknown>) => {
      const r = await t.rest('POST', `/api/v1/buckets/${bucket.id}/inventory-exports`, { key, body });
      expect(r.status).toBe(202);
      return waitFor(
        async () => {
          const g = await t.rest('GET', `/api/v1/buckets/${bucket.id}/inventory-exports/${r.body.data.id}`, { key });
          return g.body.data.status === 'succeeded' ? g.body.data : null;
        },
        20_000,
        'export',
      );
    };
    const csv = await start({ format: 'csv', prefix: 'a/' });
    expect(csv).toMatchObject({ format: 'csv', prefix: 'a/', row_count: 2, file_url: expect.stringMatching(/\/file$/) });
    const file = await fetch(`${t.bridgeUrl}/api/v1/buckets/${bucket.id}/inventory-exports/${csv.id}/file`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toContain('text/csv');
    const lines = (await file.text()).trimEnd().split('\r\n');
    expect(lines[0]).toBe('key,asset_id,size,content_type,sha256,version,visibility,status,updated_at');
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(/^a\/one\.txt,[^,]+,1,/);
    expect(lines[2]).toMatch(/^"a\/two,""quoted"".txt",[^,]+,2,/);
    const jsonl = await start({ format: 'jsonl' });
    expect(jsonl.row_count).toBe(3);
    const jf = await fetch(`${t.bridgeUrl}/api/v1/buckets/${bucket.id}/inventory-exports/${jsonl.id}/file`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const rows = (await jf.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows.map((r) => [r.key, r.size])).toEqual([
      ['a/one.txt', 1],
      ['a/two,"quoted".txt', 2],
      ['b/three.txt', 3],
    ]);
    expect(rows[2].sha256).toBe(sha('333'));
    const other = await t.createKey();
    const foreign = await fetch(`${t.bridgeUrl}/api/v1/buckets/${bucket.id}/inventory-exports/${jsonl.id}/file`, {
      headers: { authorization: `Bearer ${other.key}` },
    });
    expect(foreign.status).toBe(404);
    expect((await t.rest('GET', `/api/v1/buckets/${bucket.id}/inventory-exports/${jsonl.id}`, { key: other.key })).status).toBe(
      404,
    );
    expect(
      (await t.rest('POST', `/api/v1/buckets/${bucket.id}/inventory-exports`, { key: other.key, body: { format: 'csv' } }))
        .status,
    ).toBe(404);
    expect(
      (await t.rest('POST', `/api/v1/buckets/${bucket.id}/inventory-exports`, { key, body: { format: 'xml' } })).status,
    ).toBe(400);
  });

  it('a CSV export neutralises cells a spreadsheet would read as formulas (keys starting =, +, -, @)', async () => {
    const { key, bucket } = await objstoreBucket();
    const keys = ['+1+cmd', '-2+3', '=HYPERLINK("http://x")', '@SUM(A1)', 'plain.txt'];
    for (const k of keys) await upload(key, bucket.id, k, 'x');
    const r = await t.rest('POST', `/api/v1/buckets/${bucket.id}/inventory-exports`, { key, body: { format: 'csv' } });
    expect(r.status).toBe(202);
    const done = await waitFor(
      async () => {
        const g = await t.rest('GET', `/api/v1/buckets/${bucket.id}/inventory-exports/${r.body.data.id}`, { key });
        return g.body.data.status === 'succeeded' ? g.body.data : null;
      },
      20_000,
      'export',
    );
    const file = await fetch(`${t.bridgeUrl}/api/v1/buckets/${bucket.id}/inventory-exports/${done.id}/file`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const firstCells = (await file.text())
      .trimEnd()
      .split('\r\n')
      .slice(1)
      .map((l) => (l.startsWith('"') ? l.slice(0, l.indexOf('",') + 1) : l.split(',')[0]));
    expect(firstCells).toEqual(["'+1+cmd", "'-2+3", `"'=HYPERLINK(""http://x"")"`, "'@SUM(A1)", 'plain.txt']);
  });

  it('the query filters literally and returns at most the limit (never more than 1,000)', async () => {
    const { key, bucket } = await objstoreBucket();
    for (let i = 0; i < 5; i++) await upload(key, bucket.id, `logs/${i}.txt`, 'x'.repeat(i + 1));
    await upload(key, bucket.id, 'logs/readme.md', 'readme');
    const q = (body: Record<string, unknown>, k = key) => t.rest('POST', `/api/v1/buckets/${bucket.id}/query`, { key: k, body });
    const two = await q({ prefix: 'logs/', limit: 2 });
    expect(two.status).toBe(200);
    expect(two.body.data).toMatchObject({ row_count: 2, truncated: true });
    expect(two.body.data.rows.map((r: any) => r.key)).toEqual(['logs/0.txt', 'logs/1.txt']);
    const txt = await q({ suffix: '.txt', min_size: 3 });
    expect(txt.body.data.rows.map((r: any) => r.key)).toEqual(['logs/2.txt', 'logs/3.txt', 'logs/4.txt']);
    expect(txt.body.data.truncated).toBe(false);
    // A literal prefix: regex characters match only themselves.
    expect((await q({ prefix: 'logs/.*' })).body.data.rows).toEqual([]);
    expect((await q({ limit: 1001 })).status).toBe(400);
    expect((await q({ limit: 1000 })).body.data.row_count).toBe(6);
    const other = await t.createKey();
    expect((await q({}, other.key)).status).toBe(404);
  });
});

describe('object-store buckets as event sources', () => {
  it('a subscription on a new object-store bucket is accepted at once and receives its uploads', async () => {
    const { key, bucket } = await objstoreBucket();
    const sub = await t.rest('POST', `/api/v1/buckets/${bucket.id}/event-subscriptions`, {
      key,
      body: { event_types: ['object.created'], prefix: 'in/' },
    });
    expect(sub.status).toBe(201);
    const other = await t.createKey();
    const foreign = await t.rest('POST', `/api/v1/buckets/${bucket.id}/event-subscriptions`, { key: other.key, body: {} });
    expect(foreign.status).toBe(404);
    const up = await upload(key, bucket.id, 'in/new.txt', 'hello events');
    const items = await waitFor(
      async () => {
        const r = await t.rest(
          'GET',
          `/api/v1/buckets/${bucket.id}/event-subscriptions/${sub.body.data.id}/deliveries?limit=10`,
          {
            key,
          },
        );
        return r.body.data?.items?.length ? r.body.data.items : null;
      },
      30_000,
      'a pulled delivery',
    );
    expect(items[0]).toMatchObject({
      type: 'object.created',
      data: expect.objectContaining({ bucket_id: bucket.id, key: 'in/new.txt', asset_id: up.id }),
    });
  }, 60_000);
});
