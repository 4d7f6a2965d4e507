import { createHash, randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, link, mkdir, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { BlobTooLargeError, type BlobStore, type ByteRange, SHA256_HEX, SNIFF_BYTES, type StagedBlob } from './blob-store';
import { StagingFile } from './staging-file';

/** Region names become folder names: keep them plain. */
const REGION_RE = /^[a-z0-9][a-z0-9-]{0,62}$/;

function checkRegion(region: string): string {
  if (!REGION_RE.test(region)) throw new Error(`invalid region name "${region}"`);
  return region;
}

/**
 * Hashes, counts and keeps the head of whatever passes through; fails past `maxBytes` so an
 * oversized upload stops at the limit instead of filling the disk.
 */
export class HashingMeter extends Transform {
  readonly hash = createHash('sha256');
  size = 0;
  private readonly headParts: Buffer[] = [];
  private headLen = 0;

  constructor(private readonly maxBytes = Number.POSITIVE_INFINITY) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: (e?: Error | null, data?: Buffer) => void): void {
    this.size += chunk.length;
    if (this.size > this.maxBytes) return done(new BlobTooLargeError(this.maxBytes));
    this.hash.update(chunk);
    if (this.headLen < SNIFF_BYTES) {
      const part = chunk.subarray(0, SNIFF_BYTES - this.headLen);
      this.headParts.push(Buffer.from(part));
      this.headLen += part.length;
    }
    done(null, chunk);
  }

  head(): Buffer {
    return Buffer.concat(this.headParts);
  }
}

/**
 * The filesystem blob store: `<root>/<region>/blobs/<aa>/<sha256>` for committed blobs and
 * `<root>/<region>/staging/<uuid>` for bytes still being written. Commit is a rename inside one
 * file system, so a blob is either wholly there or absent.
 */
export class FsBlobStore implements BlobStore {
  readonly kind = 'fs';

  constructor(private readonly root: string) {}

  private blobPath(region: string, sha256: string): string {
    if (!SHA256_HEX.test(sha256)) throw new Error('invalid blob address');
    return path.join(this.root, checkRegion(region), 'blobs', sha256.slice(0, 2), sha256);
  }

  private stagingDir(region: string): string {
    return path.join(this.root, checkRegion(region), 'staging');
  }

  /** Staged bytes wait outside every region, on the same file system, so commit is a rename. */
  private get uploadsDir(): string {
    return path.join(this.root, '_staging');
  }

  async stage(source: Readable, opts: { maxBytes?: number | Promise<number> } = {}): Promise<StagedBlob> {
    const tmp = path.join(this.uploadsDir, randomUUID());
    // One stage from the source to the file: hashed, counted and capped as it is written (decision
    // 0255). The pipeline takes the source before anything is awaited (the file makes its folder):
    // a source that failed while the folder was being made had no listener for its error.
    const file = new StagingFile(tmp, opts.maxBytes);
    try {
      await pipeline(source, file);
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
    return { sha256: file.digest(), size: file.size, head: file.head(), handle: tmp };
  }

  private sessionDir(sessionId: string): string {
    if (!/^[0-9a-f-]{36}$/.test(sessionId)) throw new Error('invalid session id');
    return path.join(this.root, '_sessions', sessionId);
  }

  async putPart(sessionId: string, n: number, source: Readable, opts: { maxBytes?: number } = {}) {
    const staged = await this.stage(source, opts);
    const dir = this.sessionDir(sessionId);
    await mkdir(dir, { recursive: true });
    await rename(staged.handle, path.join(dir, String(n)));
    return { sha256: staged.sha256, size: staged.size };
  }

  async assemble(sessionId: string, parts: number[], opts: { maxBytes?: number } = {}): Promise<StagedBlob> {
    const dir = this.sessionDir(sessionId);
    async function* concat() {
      for (const n of parts) yield* createReadStream(path.join(dir, String(n)));
    }
    return this.stage(Readable.from(concat()), opts);
  }

  async dropSession(sessionId: string): Promise<void> {
    await rm(this.sessionDir(sessionId), { recursive: true, force: true });
  }

  async commit(staged: StagedBlob, region: string): Promise<void> {
    const dest = this.blobPath(region, staged.sha256);
    await mkdir(path.dirname(dest), { recursive: true });
    // A blob already at its address holds these very bytes: it is kept and the staged copy dropped.
    // Renaming over it would be harmless but slow: ext4 writes the staged file out before a rename
    // that replaces a file (auto_da_alloc), ~70 ms for 64 MiB (decision 0255). `link` fails on an
    // existing name atomically; where links are not supported, the rename as before.
    try {
      await link(staged.handle, dest);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST') return rename(staged.handle, dest);
    }
    await unlink(staged.handle);
  }

  async discard(staged: StagedBlob): Promise<void> {
    await rm(staged.handle, { force: true });
  }

  async stat(region: string, sha256: string): Promise<number | null> {
    try {
      return (await stat(this.blobPath(region, sha256))).size;
    } catch {
      return null;
    }
  }

  read(region: string, sha256: string, range?: ByteRange): Readable {
    return createReadStream(this.blobPath(region, sha256), range ? { start: range.start, end: range.end } : {});
  }

  async copy(fromRegion: string, toRegion: string, sha256: string): Promise<void> {
    if ((await this.stat(toRegion, sha256)) !== null) return;
    const dir = this.stagingDir(toRegion);
    await mkdir(dir, { recursive: true });
    const tmp = path.join(dir, randomUUID());
    try {
      await copyFile(this.blobPath(fromRegion, sha256), tmp);
      const dest = this.blobPath(toRegion, sha256);
      await mkdir(path.dirname(dest), { recursive: true });
      await rename(tmp, dest);
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
  }

  async remove(region: string, sha256: string): Promise<void> {
    await unlink(this.blobPath(region, sha256)).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'ENOENT') throw e;
    });
  }

  async sweepStaged(olderThan: Date): Promise<number> {
    let removed = 0;
    const regions = await readdir(this.root).catch(() => [] as string[]);
    const dirs = [this.uploadsDir, ...regions.filter((r) => REGION_RE.test(r)).map((r) => this.stagingDir(r))];
    for (const dir of dirs) {
      for (const name of await readdir(dir).catch(() => [] as string[])) {
        const p = path.join(dir, name);
        const s = await stat(p).catch(() => null);
        if (s && s.mtime < olderThan) {
          await rm(p, { force: true });
          removed++;
        }
      }
    }
    return removed;
  }
}
