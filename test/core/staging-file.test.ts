import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { BlobTooLargeError } from '../../core/blobs/blob-store';
import { FsBlobStore } from '../../core/blobs/fs-blob-store';

/**
 * The filesystem store stages an upload through one writer (decision 0255): chunks that arrive
 * while a write is on the thread pool go out together, so a fast 8 MiB source of 64 KiB chunks
 * (what a socket delivers) costs a few `writev` calls, not one write per chunk.
 */
describe('staging a stream into the filesystem store', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'staging-'));
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));
  afterEach(() => jest.restoreAllMocks());

  const chunks = Array.from({ length: 128 }, () => randomBytes(64 * 1024));
  const whole = Buffer.concat(chunks);
  /** A source that has its next chunk ready at once, as a socket with a full receive buffer. */
  const fast = () => Readable.from(chunks, { objectMode: false, highWaterMark: 64 * 1024 });

  it('writes a fast source in batches, hashed and counted, whole', async () => {
    const write = jest.spyOn(fs, 'write');
    const writev = jest.spyOn(fs, 'writev');
    const store = new FsBlobStore(dir);
    const staged = await store.stage(fast());
    const calls = write.mock.calls.length + writev.mock.calls.length;
    expect(staged.size).toBe(whole.length);
    expect(staged.sha256).toBe(createHash('sha256').update(whole).digest('hex'));
    expect(staged.head.equals(whole.subarray(0, 4100))).toBe(true);
    expect((await readFile(staged.handle)).equals(whole)).toBe(true);
    // 128 chunks: one write each without batching; with it, a handful of large ones.
    expect(calls).toBeGreaterThan(0);
    expect(calls).toBeLessThanOrEqual(32);
    await store.discard(staged);
  });

  it('a commit of bytes already stored keeps the stored file and drops the staged copy (no rename over it)', async () => {
    const store = new FsBlobStore(dir);
    const first = await store.stage(fast());
    await store.commit(first, 'r1');
    const blob = path.join(dir, 'r1', 'blobs', first.sha256.slice(0, 2), first.sha256);
    const before = await stat(blob);
    const again = await store.stage(fast());
    await store.commit(again, 'r1');
    // The same file (not replaced: ext4 would write the staged copy out first), the staged copy gone.
    expect((await stat(blob)).ino).toBe(before.ino);
    expect((await readFile(blob)).equals(whole)).toBe(true);
    expect(fs.readdirSync(path.join(dir, '_staging'))).toEqual([]);
    await store.remove('r1', first.sha256);
  });

  it('with its limit still pending nothing is written; a source that fails meanwhile leaves no staged file', async () => {
    const store = new FsBlobStore(dir);
    let resolve!: (n: number) => void;
    const limit = new Promise<number>((r) => (resolve = r));
    const source = new Readable({ read() {} });
    source.push(chunks[0]);
    const staging = store.stage(source, { maxBytes: limit });
    await new Promise((r) => setTimeout(r, 50));
    expect(fs.readdirSync(path.join(dir, '_staging'))).toEqual([]);
    source.destroy(new Error('client went away'));
    await expect(staging).rejects.toThrow('client went away');
    resolve(Number.MAX_SAFE_INTEGER);
    await new Promise((r) => setTimeout(r, 50));
    expect(fs.readdirSync(path.join(dir, '_staging'))).toEqual([]);
  });

  it('a source that fails while the staging folder is still being made fails the stage, never unheard', async () => {
    // Under load the folder's mkdir may outlast the source: stage used to await it before piping,
    // so the source's error had no listener (an unhandled error, then a stage that never settled).
    const mkdir = fs.promises.mkdir;
    jest.spyOn(fs.promises, 'mkdir').mockImplementation(async (...args: Parameters<typeof mkdir>) => {
      await new Promise((r) => setTimeout(r, 100));
      return mkdir(...args);
    });
    const store = new FsBlobStore(dir);
    const source = new Readable({ read() {} });
    source.push(chunks[0]);
    const staging = store.stage(source, { maxBytes: 8 * 1024 * 1024 });
    source.destroy(new Error('client went away'));
    await expect(staging).rejects.toThrow('client went away');
    await new Promise((r) => setTimeout(r, 150));
    expect(fs.readdirSync(path.join(dir, '_staging'))).toEqual([]);
  });

  it('refuses past maxBytes without writing past it, and leaves no staged file', async () => {
    const store = new FsBlobStore(dir);
    await expect(store.stage(fast(), { maxBytes: 3 * 1024 * 1024 + 1 })).rejects.toBeInstanceOf(BlobTooLargeError);
    expect(fs.readdirSync(path.join(dir, '_staging'))).toEqual([]);
  });
});
