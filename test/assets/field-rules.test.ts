import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/**
 * The stored fields' rules hold on every transport (decision 0096): keys, visibility, cache
 * control and the metadata size are checked by the service, so REST and GraphQL refuse the same
 * values; the CDN never writes an unchecked stored value into a header.
 */
describe('asset field rules on every transport', () => {
  let t: TestPlatform;
  let blobDir: string;
  let cdnUrl: string;
  beforeAll(async () => {
    blobDir = await mkdtemp(path.join(tmpdir(), 'assets-rules-'));
    t = await startTestPlatform({ ASSETS_BLOB_DIR: blobDir });
    cdnUrl = t.platform.cdnUrl!;
  });
  afterAll(async () => {
    await t.stop();
    await rm(blobDir, { recursive: true, force: true });
  });

  const upload = async (key: string, fields: Record<string, string> = {}, name = 'hello.txt') => {
    const fd = new FormData();
    for (const [k, v] of Object.entries(fields)) fd.append(k, v);
    fd.append('file', new Blob([Buffer.from('hello')]), name);
    const res = await fetch(`${t.bridgeUrl}/api/v1/assets/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const cdn = (u: string) => u.replace(/^https?:\/\/[^/]+/, cdnUrl);
  const BAD_KEYS = ['../x', 'docs/../../x', 'a\r\nb', './x', '/abs', 'a\\..\\b', 'nul\u0000byte'];

  it('REST upload refuses traversal and control characters in key and folder, and CR/LF in cache_control', async () => {
    const { key } = await t.createKey();
    for (const bad of BAD_KEYS) {
      const r = await upload(key, { key: bad });
      expect([bad, r.status, r.body.error?.code]).toEqual([bad, 400, 'validation_failed']);
    }
    expect((await upload(key, { folder: '../up' })).status).toBe(400);
    expect((await upload(key, { key: 'ok/x.txt', cache_control: 'max-age=1\r\nSet-Cookie: a=b' })).status).toBe(400);
    // Nothing was stored by the refusals; a plain key still works.
    expect((await t.rest('GET', '/api/v1/assets', { key })).body.data.total).toBe(0);
    expect((await upload(key, { key: 'docs/a..b/x.txt' })).status).toBe(201);
  });

  it('REST PATCH and GraphQL patchAsset refuse the same keys, visibilities and cache controls', async () => {
    const { key } = await t.createKey();
    const up = await upload(key, { key: 'docs/one.txt', visibility: 'public' });
    expect(up.status).toBe(201);
    const id = up.body.data.id as string;
    for (const body of [
      { key: '../x' },
      { key: 'docs/../../x' },
      { key: 'a\r\nb' },
      { cache_control: 'a\r\nb' },
      { visibility: 'bogus' },
    ]) {
      const r = await t.rest('PATCH', `/api/v1/assets/${id}`, { key, body, headers: { 'if-match': '"1"' } });
      expect([JSON.stringify(body), r.status]).toEqual([JSON.stringify(body), 400]);
    }
    const gql = (input: Record<string, unknown>) =>
      t.gql(
        'mutation($id: ID!, $input: AssetPatchInput!) { patchAsset(id: $id, input: $input, ifMatch: "\\"1\\"") { id key visibility cacheControl } }',
        { id, input },
        key,
      );
    for (const input of [
      { visibility: 'bogus' },
      { key: '../x' },
      { key: 'docs/../../x' },
      { key: 'a\r\nb' },
      { cacheControl: 'x\r\ny' },
    ]) {
      const r = await gql(input);
      expect([JSON.stringify(input), r.errors?.[0]?.extensions?.code]).toEqual([JSON.stringify(input), 'validation_failed']);
    }
    const stored = (await t.rest('GET', `/api/v1/assets/${id}`, { key })).body.data;
    expect(stored).toMatchObject({ key: 'docs/one.txt', visibility: 'public', revision: 1 });
    const ok = await gql({ visibility: 'private', cacheControl: 'no-cache' });
    expect(ok.data?.patchAsset).toMatchObject({ visibility: 'private', cacheControl: 'no-cache' });
  });

  it('the CDN writes a header-unsafe stored Cache-Control as no-store instead of failing', async () => {
    const { key } = await t.createKey();
    const up = await upload(key, { key: 'pub/x.txt', visibility: 'public' });
    expect(up.status).toBe(201);
    // A value stored before the service checked it.
    await t.platform.conn
      .collection('assets')
      .updateOne({ _id: up.body.data.id }, { $set: { cacheControl: 'max-age=1\r\nX-Injected: yes' } });
    const res = await fetch(cdn(up.body.data.url));
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-injected')).toBeNull();
    expect(text).toBe('hello');
  });

  it('a metadata merge is held to 16 KiB for the merged record, on REST and GraphQL', async () => {
    const { key } = await t.createKey();
    const up = await upload(key, { key: 'meta/x.txt' });
    const id = up.body.data.id as string;
    const chunk = 'x'.repeat(6000);
    expect((await t.rest('PATCH', `/api/v1/assets/${id}/metadata`, { key, body: { a: chunk } })).status).toBe(200);
    expect((await t.rest('PATCH', `/api/v1/assets/${id}/metadata`, { key, body: { b: chunk } })).status).toBe(200);
    const third = await t.rest('PATCH', `/api/v1/assets/${id}/metadata`, { key, body: { c: chunk } });
    expect(third.status).toBe(400);
    expect(third.body.error).toMatchObject({ code: 'validation_failed', details: { limit: 16384 } });
    const g = await t.gql(
      'mutation($id: ID!, $m: JSONObject!) { mergeAssetMetadata(id: $id, metadata: $m) { id } }',
      { id, m: { c: chunk } },
      key,
    );
    expect(g.errors?.[0]?.extensions?.code).toBe('validation_failed');
    const stored = (await t.rest('GET', `/api/v1/assets/${id}`, { key })).body.data;
    expect(Object.keys(stored.metadata).sort()).toEqual(['a', 'b']);
    // Removing keys is always allowed, and makes room again.
    expect((await t.rest('PATCH', `/api/v1/assets/${id}/metadata`, { key, body: { a: null, c: chunk } })).status).toBe(200);
  });
});
