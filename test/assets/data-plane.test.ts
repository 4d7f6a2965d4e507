import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { EICAR } from '../../subgraphs/assets/scanning/scanner';
import { form, type Harness, PNG, startHarness } from './harness';

/** The upload byte path and CDN delivery on bare Fastify (the bridge registers the same plugins). */
describe('assets data plane', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h.close());

  const upload = async (headers: Record<string, string>, body: FormData) => {
    const res = await fetch(`${h.bridgeUrl}/api/v1/assets/upload`, { method: 'POST', headers, body });
    return { status: res.status, etag: res.headers.get('etag'), body: (await res.json()) as any };
  };

  const blobFiles = async () => {
    const out: string[] = [];
    const walk = async (dir: string) => {
      for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) await walk(p);
        else out.push(p);
      }
    };
    await walk(h.blobRoot);
    return out;
  };

  it('uploads, sniffs the type from the bytes, records the checksum and sends the revision as ETag', async () => {
    const p = h.principal();
    const sha = createHash('sha256').update(PNG).digest('hex');
    const r = await upload(
      h.headers(p),
      form(PNG, 'pixel.txt', { key: 'img/pixel.png', visibility: 'public', metadata: '{"a":1}' }),
    );
    expect(r.status).toBe(201);
    expect(r.body.success).toBe(true);
    expect(r.body.data).toMatchObject({
      key: 'img/pixel.png',
      mime_type: 'image/png',
      type: 'image',
      size: PNG.length,
      checksum_sha256: sha,
      status: 'ready',
      scan_status: 'clean',
      visibility: 'public',
      metadata: { a: 1 },
      original_name: 'pixel.txt',
      revision: 1,
    });
    expect(r.etag).toBe('"1"');

    // Public delivery, ETag revalidation, Range and the headers from the asset.
    const url = `${h.cdnUrl}/assets/${r.body.data.id}/versions/1/pixel.txt`;
    const got = await fetch(url);
    expect(got.status).toBe(200);
    expect(Buffer.from(await got.arrayBuffer()).equals(PNG)).toBe(true);
    expect(got.headers.get('content-type')).toBe('image/png');
    expect(got.headers.get('cache-control')).toBe('public, max-age=3600');
    expect(got.headers.get('content-disposition')).toContain('pixel.txt');
    const etag = got.headers.get('etag') as string;
    expect((await fetch(url, { headers: { 'If-None-Match': etag } })).status).toBe(304);
    const part = await fetch(url, { headers: { Range: 'bytes=0-7' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 0-7/${PNG.length}`);
    expect(Buffer.from(await part.arrayBuffer()).equals(PNG.subarray(0, 8))).toBe(true);
    expect((await fetch(url, { headers: { Range: 'bytes=9999-' } })).status).toBe(416);
  });

  it('refuses a duplicate key (409), a checksum mismatch (422), a policy violation (400) and a full quota (402), storing nothing', async () => {
    const p = h.principal();
    const before = (await blobFiles()).length;
    expect((await upload(h.headers(p), form('hello', 'a.txt', { key: 'k1' }))).status).toBe(201);
    const afterFirst = (await blobFiles()).length;
    expect(afterFirst).toBe(before + 1);

    const dup = await upload(h.headers(p), form('other bytes', 'a.txt', { key: 'k1' }));
    expect(dup.status).toBe(409);
    expect(dup.body).toEqual({ success: false, error: expect.objectContaining({ code: 'assets.duplicate_key' }) });

    const bad = await upload(h.headers(p), form('abc', 'b.txt', { key: 'k2', checksum_sha256: '0'.repeat(64) }));
    expect(bad.status).toBe(422);
    expect(bad.body.error.code).toBe('assets.checksum_mismatch');

    await h.assets.putPolicy(p, { allowedMimeTypes: ['image/*'] });
    const pol = await upload(h.headers(p), form('just text', 'c.txt', { key: 'k3' }));
    expect(pol.status).toBe(400);
    expect(pol.body.error.code).toBe('assets.policy_violation');
    await h.assets.putPolicy(p, {});

    await h.conn.collection('asset_accounts').updateOne({ _id: p.accountId as never }, { $set: { usedBytes: 5 * 1024 ** 3 } });
    const full = await upload(h.headers(p), form('more', 'd.txt', { key: 'k4' }));
    expect(full.status).toBe(402);
    expect(full.body.error.code).toBe('assets.quota_exceeded');

    expect((await blobFiles()).length).toBe(afterFirst);
    const list = await h.assets.list(p, { filter: {} });
    expect(list.assets.map((a) => a.key)).toEqual(['k1']);
  });

  it('quarantines the EICAR test file and does not deliver it', async () => {
    const p = h.principal();
    const r = await upload(h.headers(p), form(EICAR, 'eicar.com', { visibility: 'public' }));
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({
      status: 'quarantined',
      scan_status: 'infected',
      quarantine_status: 'quarantined',
      url: null,
    });
    expect((await fetch(`${h.cdnUrl}/assets/${r.body.data.id}/versions/1/eicar.com`)).status).toBe(404);
  });

  it('needs a key (401) with write access (403 for read-only keys and keys without assets:write)', async () => {
    expect((await upload({}, form('x', 'x.txt'))).status).toBe(401);
    const ro = await upload(h.headers(h.principal({ role: 'read_only' })), form('x', 'x.txt'));
    expect(ro.status).toBe(403);
    const narrow = await upload(h.headers(h.principal({ scopes: ['assets:read'] })), form('x', 'x.txt'));
    expect(narrow.status).toBe(403);
    expect(narrow.body.error.code).toBe('insufficient_scope');
  });

  it('serves a private asset only by signed URL, at most max_downloads times, and hides other accounts', async () => {
    const p = h.principal();
    const r = await upload(h.headers(p), form('secret bytes', 'notes.txt', { visibility: 'private' }));
    const id = r.body.data.id;
    expect((await fetch(`${h.cdnUrl}/assets/${id}/versions/1/notes.txt`)).status).toBe(404);
    const signed = await h.assets.signedUrl(p, id, 60, 2);
    const url = signed.url.replace(/^https?:\/\/[^/]+/, h.cdnUrl);
    const first = await fetch(url);
    expect(first.status).toBe(200);
    expect(await first.text()).toBe('secret bytes');
    expect(first.headers.get('cache-control')).toBe('private, no-store');
    expect((await fetch(url)).status).toBe(200);
    expect((await fetch(url)).status).toBe(404);
    await expect(h.assets.signedUrl(h.principal(), id, 60, null)).rejects.toMatchObject({ status: 404 });
    await expect(h.assets.get(h.principal(), id)).rejects.toMatchObject({ status: 404 });
  });

  it('replaces the bytes under the same id as a new version', async () => {
    const p = h.principal();
    const r = await upload(h.headers(p), form('v1', 'doc.txt', { visibility: 'public' }));
    const id = r.body.data.id;
    const fd = form('version two', 'doc.txt');
    const stale = await fetch(`${h.bridgeUrl}/api/v1/assets/${id}/replace`, {
      method: 'PUT',
      headers: h.headers(p, { 'If-Match': '"7"' }),
      body: fd,
    });
    expect(stale.status).toBe(412);
    const res = await fetch(`${h.bridgeUrl}/api/v1/assets/${id}/replace`, {
      method: 'PUT',
      headers: h.headers(p, { 'If-Match': '"1"' }),
      body: form('version two', 'doc.txt'),
    });
    const body = (await res.json()) as any;
    expect(res.status).toBe(200);
    expect(body.data).toMatchObject({ id, current_version: 2, size: 11, revision: 2 });
    expect(await (await fetch(`${h.cdnUrl}/assets/${id}/versions/2/doc.txt`)).text()).toBe('version two');
    expect((await fetch(`${h.cdnUrl}/assets/${id}/versions/1/doc.txt`)).status).toBe(404);
  });
});
