import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import type { BlobStore } from '../../core/blobs/blob-store';
import { BlobTooLargeError } from '../../core/blobs/blob-store';
import { FsBlobStore } from '../../core/blobs/fs-blob-store';
import { S3BlobStore, s3Client } from '../../core/blobs/s3-blob-store';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const drain = async (r: Readable) => {
  const parts: Buffer[] = [];
  for await (const c of r) parts.push(c as Buffer);
  return Buffer.concat(parts);
};

/** One contract, two stores: the filesystem store and the S3 store against a local S3 server (s3rver). */
const stores: [string, () => Promise<{ store: BlobStore; stop: () => Promise<void> }>][] = [
  [
    'fs',
    async () => {
      const dir = await mkdtemp(path.join(tmpdir(), 'blobs-'));
      return { store: new FsBlobStore(dir), stop: () => rm(dir, { recursive: true, force: true }) };
    },
  ],
  [
    's3 (s3rver)',
    async () => {
      const dir = await mkdtemp(path.join(tmpdir(), 's3rver-'));
      const server = new S3rver({ port: 0, address: '127.0.0.1', directory: dir, silent: true });
      const { port } = (await server.run()) as { port: number };
      const client = s3Client({ endpoint: `http://127.0.0.1:${port}`, accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' });
      await client.send(new CreateBucketCommand({ Bucket: 'assets' }));
      return {
        store: new S3BlobStore({ client, bucket: 'assets', prefix: 'p/' }),
        stop: async () => {
          client.destroy();
          await server.close();
          await rm(dir, { recursive: true, force: true });
        },
      };
    },
  ],
];

describe.each(stores)('blob store contract: %s', (_name, make) => {
  let store: BlobStore;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    ({ store, stop } = await make());
  });
  afterAll(async () => stop());

  it('stages with hash, size and head; commits by content address; reads ranges; copies across regions; removes', async () => {
    const bytes = randomBytes(6 * 1024 * 1024 + 3);
    const staged = await store.stage(Readable.from([bytes.subarray(0, 1000), bytes.subarray(1000)]));
    expect(staged).toMatchObject({ sha256: sha(bytes), size: bytes.length });
    expect(staged.head.equals(bytes.subarray(0, 4100))).toBe(true);
    expect(await store.stat('local-1', staged.sha256)).toBeNull();
    await store.commit(staged, 'local-1');
    expect(await store.stat('local-1', staged.sha256)).toBe(bytes.length);
    expect((await drain(store.read('local-1', staged.sha256))).equals(bytes)).toBe(true);
    expect((await drain(store.read('local-1', staged.sha256, { start: 10, end: 19 }))).equals(bytes.subarray(10, 20))).toBe(true);
    await store.copy('local-1', 'local-2', staged.sha256);
    expect(await store.stat('local-2', staged.sha256)).toBe(bytes.length);
    await store.remove('local-1', staged.sha256);
    expect(await store.stat('local-1', staged.sha256)).toBeNull();
    expect(await store.stat('local-2', staged.sha256)).toBe(bytes.length);
  });

  it('refuses past maxBytes and leaves nothing staged; discard forgets; sweep removes old staged bytes', async () => {
    await expect(store.stage(Readable.from([randomBytes(2048)]), { maxBytes: 1024 })).rejects.toBeInstanceOf(BlobTooLargeError);
    const staged = await store.stage(Readable.from([Buffer.from('abc')]));
    await store.discard(staged);
    await store.discard(staged);
    await store.stage(Readable.from([Buffer.from('left behind')]));
    expect(await store.sweepStaged(new Date(Date.now() + 60_000))).toBeGreaterThanOrEqual(1);
    expect(await store.sweepStaged(new Date(Date.now() + 60_000))).toBe(0);
  });

  it('a source that fails while its limit is still pending fails the stage, never unheard, and stages nothing', async () => {
    let resolve!: (n: number) => void;
    const limit = new Promise<number>((r) => (resolve = r));
    const source = new Readable({ read() {} });
    source.push(Buffer.from('abc'));
    const staging = store.stage(source, { maxBytes: limit });
    source.destroy(new Error('client went away'));
    await expect(staging).rejects.toThrow('client went away');
    resolve(1024);
    await new Promise((r) => setTimeout(r, 50));
    expect(await store.sweepStaged(new Date(Date.now() + 60_000))).toBe(0);
  });

  it('session parts: written in any order, assembled in order, dropped', async () => {
    const id = randomUUID();
    const parts = [randomBytes(1000), randomBytes(2000), randomBytes(10)];
    for (const n of [3, 1, 2]) {
      const got = await store.putPart(id, n, Readable.from([parts[n - 1]]));
      expect(got).toEqual({ sha256: sha(parts[n - 1]), size: parts[n - 1].length });
    }
    const whole = await store.assemble(id, [1, 2, 3]);
    expect(whole.sha256).toBe(sha(Buffer.concat(parts)));
    await store.discard(whole);
    await store.dropSession(id);
    await expect(store.assemble(id, [1])).rejects.toBeDefined();
  });
});
