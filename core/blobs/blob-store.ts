import type { Readable } from 'node:stream';

/**
 * Where asset bytes live. Blobs are content-addressed by their hex SHA-256 and kept per region, so
 * a home region and its replicas are real, separate copies. Writes are staged: bytes go to a
 * temporary place while they are hashed and counted, and become visible only on `commit`, so a
 * failed or abandoned upload leaves nothing behind (a process that dies mid-upload leaves only a
 * staged file, which `sweepStaged` removes at the next start).
 */
export interface StagedBlob {
  sha256: string;
  size: number;
  /** The first bytes (up to `SNIFF_BYTES`), for MIME sniffing without a second read. */
  head: Buffer;
  /** Implementation handle (a temp path, an upload key). */
  handle: string;
}

export interface ByteRange {
  start: number;
  /** Inclusive. */
  end: number;
}

export interface BlobStore {
  readonly kind: string;
  /**
   * Streams `source` into a staged blob; rejects (and removes the staged bytes) past `maxBytes`.
   * `maxBytes` may be a promise (decision 0255): nothing is stored before it resolves (the source
   * waits, its first bytes buffered), and its rejection is the stage's.
   */
  stage(source: Readable, opts?: { maxBytes?: number | Promise<number> }): Promise<StagedBlob>;
  /** Makes a staged blob visible in `region` under its content address (a blob already there is kept). */
  commit(staged: StagedBlob, region: string): Promise<void>;
  /** Forgets a staged blob. Safe to call twice. */
  discard(staged: StagedBlob): Promise<void>;
  /** Size of a committed blob, or null when the region has no copy. */
  stat(region: string, sha256: string): Promise<number | null>;
  read(region: string, sha256: string, range?: ByteRange): Readable;
  /** Copies a committed blob into another region (replication). */
  copy(fromRegion: string, toRegion: string, sha256: string): Promise<void>;
  remove(region: string, sha256: string): Promise<void>;
  /**
   * Upload-session parts: each part is written atomically under its session and replaced whole
   * when sent again; `assemble` streams the parts in order into one staged blob (hashed on the way).
   */
  putPart(
    sessionId: string,
    n: number,
    source: Readable,
    opts?: { maxBytes?: number },
  ): Promise<{ sha256: string; size: number }>;
  assemble(sessionId: string, parts: number[], opts?: { maxBytes?: number }): Promise<StagedBlob>;
  dropSession(sessionId: string): Promise<void>;
  /** Removes staged blobs older than `olderThan` (left by a process that died mid-write). */
  sweepStaged(olderThan: Date): Promise<number>;
}

/** Bytes kept from the start of a stream for sniffing (file-type reads at most 4100). */
export const SNIFF_BYTES = 4100;

export class BlobTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`blob exceeds ${maxBytes} bytes`);
  }
}

export const SHA256_HEX = /^[0-9a-f]{64}$/;
