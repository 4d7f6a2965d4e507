import { randomUUID } from 'node:crypto';
import { PassThrough, Readable } from 'node:stream';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { type BlobStore, type ByteRange, SHA256_HEX, type StagedBlob } from './blob-store';
import { HashingMeter } from './fs-blob-store';

const REGION_RE = /^[a-z0-9][a-z0-9-]{0,62}$/;
/** Multipart upload: 8 MiB parts, 4 in flight — at most ~32 MiB of a stream in memory. */
const PART_SIZE = 8 * 1024 * 1024;
const QUEUE_SIZE = 4;

export interface S3BlobStoreOptions {
  client: S3Client;
  bucket: string;
  /** Key prefix inside the bucket (e.g. `assets/`). */
  prefix?: string;
}

const isMissing = (e: unknown) => {
  const err = e as { name?: string; $metadata?: { httpStatusCode?: number } };
  return err.name === 'NotFound' || err.name === 'NoSuchKey' || err.$metadata?.httpStatusCode === 404;
};

/**
 * The S3-compatible blob store (official AWS SDK): `<prefix><region>/blobs/<sha256>` for committed
 * blobs, `<prefix>_staging/<uuid>` for bytes being written (a streamed multipart upload, hashed on
 * the way), `<prefix>_sessions/<id>/<n>` for session parts. Commit is a server-side copy of the
 * staged object to its content address, then the staged object is deleted.
 */
export class S3BlobStore implements BlobStore {
  readonly kind = 's3';
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;

  constructor(opts: S3BlobStoreOptions) {
    this.client = opts.client;
    this.bucket = opts.bucket;
    this.prefix = opts.prefix ?? '';
  }

  private blobKey(region: string, sha256: string): string {
    if (!REGION_RE.test(region)) throw new Error(`invalid region name "${region}"`);
    if (!SHA256_HEX.test(sha256)) throw new Error('invalid blob address');
    return `${this.prefix}${region}/blobs/${sha256}`;
  }

  private partKey(sessionId: string, n: number): string {
    if (!/^[0-9a-f-]{36}$/.test(sessionId)) throw new Error('invalid session id');
    return `${this.prefix}_sessions/${sessionId}/${n}`;
  }

  /** Streams `source` through the meter into `key`; aborts the multipart upload on failure. */
  private async put(key: string, source: Readable, maxBytes?: number): Promise<HashingMeter> {
    const meter = new HashingMeter(maxBytes);
    const body = source.pipe(meter);
    source.once('error', (e) => meter.destroy(e));
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: key, Body: body },
      partSize: PART_SIZE,
      queueSize: QUEUE_SIZE,
      leavePartsOnError: false,
    });
    const failed = new Promise<never>((_, reject) => meter.once('error', reject));
    try {
      await Promise.race([upload.done(), failed]);
    } catch (e) {
      await upload.abort().catch(() => undefined);
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key })).catch(() => undefined);
      throw e;
    }
    return meter;
  }

  async stage(source: Readable, opts: { maxBytes?: number | Promise<number> } = {}): Promise<StagedBlob> {
    const key = `${this.prefix}_staging/${randomUUID()}`;
    // A pending limit: the source waits (backpressure) until it is known. The source is heard
    // meanwhile: one that fails before the limit is known fails the stage (it had no listener).
    const failed = new Promise<never>((_, reject) => source.once('error', reject));
    failed.catch(() => undefined);
    const meter = await this.put(key, source, await Promise.race([opts.maxBytes, failed]));
    return { sha256: meter.hash.digest('hex'), size: meter.size, head: meter.head(), handle: key };
  }

  async commit(staged: StagedBlob, region: string): Promise<void> {
    const dest = this.blobKey(region, staged.sha256);
    if ((await this.stat(region, staged.sha256)) === null) {
      await this.client.send(
        new CopyObjectCommand({ Bucket: this.bucket, Key: dest, CopySource: `${this.bucket}/${encodeURI(staged.handle)}` }),
      );
    }
    await this.discard(staged);
  }

  async discard(staged: StagedBlob): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: staged.handle })).catch(() => undefined);
  }

  async stat(region: string, sha256: string): Promise<number | null> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.blobKey(region, sha256) }));
      return head.ContentLength ?? 0;
    } catch (e) {
      if (isMissing(e)) return null;
      throw e;
    }
  }

  private readKey(key: string, range?: ByteRange): Readable {
    const out = new PassThrough();
    this.client
      .send(
        new GetObjectCommand({ Bucket: this.bucket, Key: key, Range: range ? `bytes=${range.start}-${range.end}` : undefined }),
      )
      .then((res) => {
        const body = res.Body as Readable;
        body.once('error', (e) => out.destroy(e));
        body.pipe(out);
      })
      .catch((e: Error) => out.destroy(e));
    return out;
  }

  read(region: string, sha256: string, range?: ByteRange): Readable {
    return this.readKey(this.blobKey(region, sha256), range);
  }

  async copy(fromRegion: string, toRegion: string, sha256: string): Promise<void> {
    if ((await this.stat(toRegion, sha256)) !== null) return;
    await this.client.send(
      new CopyObjectCommand({
        Bucket: this.bucket,
        Key: this.blobKey(toRegion, sha256),
        CopySource: `${this.bucket}/${this.blobKey(fromRegion, sha256)}`,
      }),
    );
  }

  async remove(region: string, sha256: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.blobKey(region, sha256) }));
  }

  async putPart(sessionId: string, n: number, source: Readable, opts: { maxBytes?: number } = {}) {
    // A part is written to its final key in one PUT: S3 replaces an object atomically.
    const meter = await this.put(this.partKey(sessionId, n), source, opts.maxBytes);
    return { sha256: meter.hash.digest('hex'), size: meter.size };
  }

  async assemble(sessionId: string, parts: number[], opts: { maxBytes?: number } = {}): Promise<StagedBlob> {
    const keys = parts.map((n) => this.partKey(sessionId, n));
    const read = (key: string) => this.readKey(key);
    async function* concat() {
      for (const key of keys) yield* read(key);
    }
    return this.stage(Readable.from(concat()), opts);
  }

  private async deletePrefix(prefix: string, olderThan?: Date): Promise<number> {
    let removed = 0;
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }),
      );
      const doomed = (page.Contents ?? []).filter((o) => o.Key && (!olderThan || (o.LastModified && o.LastModified < olderThan)));
      if (doomed.length > 0) {
        await this.client.send(
          new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: doomed.map((o) => ({ Key: o.Key! })) } }),
        );
        removed += doomed.length;
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return removed;
  }

  async dropSession(sessionId: string): Promise<void> {
    await this.deletePrefix(`${this.prefix}_sessions/${sessionId}/`);
  }

  async sweepStaged(olderThan: Date): Promise<number> {
    return this.deletePrefix(`${this.prefix}_staging/`, olderThan);
  }
}

/** A client for an S3-compatible endpoint (path-style addressing, as local servers need). */
export function s3Client(opts: { endpoint?: string; region?: string; accessKeyId?: string; secretAccessKey?: string }): S3Client {
  return new S3Client({
    endpoint: opts.endpoint,
    region: opts.region ?? 'us-east-1',
    forcePathStyle: Boolean(opts.endpoint),
    // Without explicit keys the SDK's default chain applies (environment, instance role, …).
    ...(opts.accessKeyId && opts.secretAccessKey
      ? { credentials: { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey } }
      : {}),
  });
}
