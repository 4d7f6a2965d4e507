import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { s3Client } from '../../core/blobs/s3-blob-store';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/** The platform with ASSETS_BLOB_STORE=s3 against a local S3-compatible server: upload, CDN, replication. */
describe('assets on the S3 blob store', () => {
  let t: TestPlatform;
  let server: S3rver;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 's3rver-e2e-'));
    server = new S3rver({ port: 0, address: '127.0.0.1', directory: dir, silent: true });
    const { port } = await server.run();
    const endpoint = `http://127.0.0.1:${port}`;
    const client = s3Client({ endpoint, accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' });
    await client.send(new CreateBucketCommand({ Bucket: 'assets-e2e' }));
    client.destroy();
    t = await startTestPlatform({
      ASSETS_BLOB_STORE: 's3',
      ASSETS_S3_ENDPOINT: endpoint,
      ASSETS_S3_BUCKET: 'assets-e2e',
      ASSETS_S3_ACCESS_KEY_ID: 'S3RVER',
      ASSETS_S3_SECRET_ACCESS_KEY: 'S3RVER',
    });
  });
  afterAll(async () => {
    await t.stop();
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('uploads into S3, delivers with Range from the CDN and replicates', async () => {
    const { key } = await t.createKey();
    const bucket = await t.rest('POST', '/api/v1/assets/buckets', {
      key,
      body: { name: 'rep', default_visibility: 'public', replication_policy: { regions: ['local-2'] } },
    });
    const fd = new FormData();
    fd.append('bucket', bucket.body.data.id);
    fd.append('file', new Blob(['bytes kept in s3']), 's3.txt');
    const res = await fetch(`${t.bridgeUrl}/api/v1/assets/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    });
    const asset = ((await res.json()) as any).data;
    expect(res.status).toBe(201);
    const url = asset.url.replace(/^https?:\/\/[^/]+/, t.platform.cdnUrl!);
    expect(await (await fetch(url)).text()).toBe('bytes kept in s3');
    const part = await fetch(url, { headers: { range: 'bytes=6-9' } });
    expect(part.status).toBe(206);
    expect(await part.text()).toBe('kept');
    const deadline = Date.now() + 10_000;
    let status = '';
    while (Date.now() < deadline && status !== 'replicated') {
      await new Promise((r) => setTimeout(r, 100));
      status = (await t.rest('GET', `/api/v1/assets/${asset.id}`, { key })).body.data.replication_status;
    }
    expect(status).toBe('replicated');
  });
});
