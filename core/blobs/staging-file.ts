import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { BlobTooLargeError, SNIFF_BYTES } from './blob-store';

/**
 * Bytes a staging file buffers while a write is on the thread pool (decision 0255): the socket
 * keeps being read meanwhile, and what arrived goes out as one `writev`.
 */
export const STAGING_HIGH_WATER_MARK = 2 * 1024 * 1024;

/**
 * The one stage between an upload's byte stream and its staged file (decision 0255): it counts,
 * refuses past `maxBytes` before writing, keeps the head for sniffing, and hashes each batch while
 * that batch's `writev` is on the thread pool. Chunks that arrive during a write are written
 * together by the next one, so a fast source costs a few large writes, not one per socket read.
 * The file is created exclusively (`wx`), its folder first if missing; the caller removes it on
 * failure. A `maxBytes` still pending (an upload's quota hold in flight) delays the file: the first
 * chunks wait in the stream's buffer, up to its high-water mark, and a rejection fails the stream
 * before anything is written. Nothing has to be awaited before the stream is piped to: a caller
 * pipes its source at once, so a source that fails early fails the pipeline, never unheard.
 */
export class StagingFile extends Writable {
  private readonly hash = createHash('sha256');
  size = 0;
  /** `writev` calls issued (a test counts them). */
  writes = 0;
  private fd: number | null = null;
  private readonly headParts: Buffer[] = [];
  private headLen = 0;
  private maxBytes = Number.POSITIVE_INFINITY;

  constructor(
    private readonly file: string,
    private readonly limit: number | Promise<number> = Number.POSITIVE_INFINITY,
    highWaterMark = STAGING_HIGH_WATER_MARK,
  ) {
    super({ highWaterMark });
  }

  override _construct(done: (e?: Error | null) => void): void {
    Promise.all([fs.promises.mkdir(path.dirname(this.file), { recursive: true }), this.limit]).then(
      ([, max]) => {
        this.maxBytes = max;
        // Destroyed while the limit was pending (the source failed): no file is made at all.
        if (this.destroyed) return done();
        fs.open(this.file, 'wx', (e, fd) => {
          if (!e) this.fd = fd;
          done(e);
        });
      },
      (e: Error) => done(e),
    );
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (e?: Error | null) => void): void {
    this.writeBatch([chunk], done);
  }

  override _writev(items: { chunk: Buffer }[], done: (e?: Error | null) => void): void {
    this.writeBatch(
      items.map((x) => x.chunk),
      done,
    );
  }

  private writeBatch(chunks: Buffer[], done: (e?: Error | null) => void): void {
    let bytes = 0;
    for (const c of chunks) bytes += c.length;
    // The limit is checked before a byte of the batch reaches the file.
    if (this.size + bytes > this.maxBytes) return done(new BlobTooLargeError(this.maxBytes));
    this.size += bytes;
    this.writeAll(chunks, bytes, done);
    // The thread pool writes while the main thread hashes (both only read the buffers).
    for (const c of chunks) {
      this.hash.update(c);
      if (this.headLen < SNIFF_BYTES) {
        const part = c.subarray(0, SNIFF_BYTES - this.headLen);
        this.headParts.push(Buffer.from(part));
        this.headLen += part.length;
      }
    }
  }

  /** `writev` until every byte is written (a short write sends the rest). */
  private writeAll(chunks: Buffer[], bytes: number, done: (e?: Error | null) => void): void {
    this.writes++;
    fs.writev(this.fd as number, chunks, (e, written) => {
      if (e) return done(e);
      if (written >= bytes) return done();
      let skip = written;
      const rest: Buffer[] = [];
      for (const c of chunks) {
        if (skip >= c.length) skip -= c.length;
        else {
          rest.push(skip > 0 ? c.subarray(skip) : c);
          skip = 0;
        }
      }
      this.writeAll(rest, bytes - written, done);
    });
  }

  override _destroy(err: Error | null, done: (e?: Error | null) => void): void {
    const fd = this.fd;
    this.fd = null;
    if (fd === null) return done(err);
    // A file not written whole is removed here too, after its close: the caller's cleanup may have
    // run while the open was still in flight.
    const unfinished = err !== null || !this.writableFinished;
    fs.close(fd, (e) => {
      if (!unfinished) return done(err ?? e);
      fs.unlink(this.file, () => done(err ?? e));
    });
  }

  /** The SHA-256 of everything written, hex (once the stream finished). */
  digest(): string {
    return this.hash.digest('hex');
  }

  head(): Buffer {
    return Buffer.concat(this.headParts);
  }
}
