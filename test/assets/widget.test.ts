import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/** `{base_url}/assets/widget`: capability-token browser uploads with CORS from the bucket's allowed origins. */
describe('assets upload widget', () => {
  let t: TestPlatform;
  let blobDir: string;
  beforeAll(async () => {
    blobDir = await mkdtemp(path.join(tmpdir(), 'assets-widget-'));
    t = await startTestPlatform({ ASSETS_BLOB_DIR: blobDir });
  });
  afterAll(async () => {
    await t.stop();
    await rm(blobDir, { recursive: true, force: true });
  });

  const send = (token: string | null, origin: string | null, fields: Record<string, string> = {}) => {
    const fd = new FormData();
    for (const [k, v] of Object.entries(fields)) fd.append(k, v);
    fd.append('file', new Blob(['from the browser']), 'w.txt');
    const headers: Record<string, string> = {};
    if (token) headers['x-upload-capability'] = token;
    if (origin) headers.origin = origin;
    return fetch(`${t.bridgeUrl}/assets/widget`, { method: 'POST', headers, body: fd });
  };

  it('answers the preflight, lets a listed origin upload and read the answer, refuses others', async () => {
    const { key } = await t.createKey();
    const bucket = (
      await t.rest('POST', '/api/v1/assets/buckets', {
        key,
        body: { name: 'web', allowed_origins: ['https://app.example.com', 'http://localhost:3000/'] },
      })
    ).body.data;
    const cap = (await t.rest('POST', '/api/v1/assets/upload-capabilities', { key, body: { bucket: bucket.id, folder: 'in' } }))
      .body.data;

    const pre = await fetch(`${t.bridgeUrl}/assets/widget`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'x-upload-capability',
      },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(pre.headers.get('access-control-allow-methods')).toBe('POST');
    expect(pre.headers.get('access-control-allow-headers')).toMatch(/X-Upload-Capability/i);

    const ok = await send(cap.token, 'https://app.example.com');
    expect(ok.status).toBe(201);
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(ok.headers.get('access-control-expose-headers')).toBe('ETag');
    expect(((await ok.json()) as any).data).toMatchObject({ bucket: bucket.id, key: 'in/w.txt' });
    expect((await send(cap.token, 'http://localhost:3000', { key: 'local.txt' })).status).toBe(201);

    const evil = await send(cap.token, 'https://evil.example.net');
    expect(evil.status).toBe(403);
    expect(evil.headers.get('access-control-allow-origin')).toBeNull();
    expect(((await evil.json()) as any).error.code).toBe('assets.origin_not_allowed');

    // Not a browser (no Origin): the token alone decides.
    expect((await send(cap.token, null, { key: 'server.txt' })).status).toBe(201);
    // The capability fixes the bucket.
    const other = (await t.rest('POST', '/api/v1/assets/buckets', { key, body: { name: 'other' } })).body.data;
    expect((await send(cap.token, null, { bucket: other.id })).status).toBe(400);

    const bad = await send('not-a-token', 'https://app.example.com');
    expect(bad.status).toBe(401);
    expect(bad.headers.get('access-control-allow-origin')).toBeNull();
    expect((await send(null, null)).status).toBe(401);

    // Without a bucket in the capability, the default bucket's origins (none here) apply.
    const plain = (await t.rest('POST', '/api/v1/assets/upload-capabilities', { key, body: {} })).body.data;
    expect((await send(plain.token, 'https://app.example.com')).status).toBe(403);
    expect((await send(plain.token, null, { key: 'd.txt' })).status).toBe(201);
  });
});
