import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import type { Model } from 'mongoose';
import type { BlobStore } from '../../core/blobs/blob-store';
import { invalidConfiguration } from './errors';
import type { ArtifactDoc, ReleaseDoc } from './model';

const run = promisify(execFile);

/** Largest bundle archive accepted: 64 MiB. */
export const MAX_ARTIFACT_BYTES = 64 * 1024 * 1024;
export const ARTIFACT_ID = /^[0-9a-f]{64}$/;
/** The blob store's region (folder, key prefix) that holds release artifacts. */
export const ARTIFACT_REGION = 'commerce-artifacts';
/**
 * Retention (docs/spec-decisions.md, commerce release cleanup): an artifact that no release record
 * names is removed once it was last uploaded or deployed more than 24 h ago; one that any release
 * names (a rollback or a retry may need it) is kept.
 */
export const ARTIFACT_RETENTION_MS = 24 * 60 * 60 * 1000;

/**
 * Release artifacts (docs/decisions/0130-commerce-runtime.md): a bundle directory packed into a tar
 * archive whose bytes depend only on the files (names sorted, owner, group and times fixed), kept in
 * the blob store (core/blobs/, the interface Assets uses; filesystem or S3) under its SHA-256. The
 * same bundle packs to the same bytes, so it is stored (and deployed from) once. A release's working
 * directory is unpacked from the store; a record per artifact (`commerce_artifacts`) carries when it
 * was last used, for the retention sweep.
 */
export class ArtifactStore {
  constructor(
    private readonly blobs: BlobStore,
    private readonly models: { Artifact: Model<ArtifactDoc>; Release: Model<ReleaseDoc> },
  ) {}

  private check(sha256: string): string {
    if (!ARTIFACT_ID.test(sha256)) throw invalidConfiguration('artifact must be a SHA-256 in hex', { field: 'artifact' });
    return sha256;
  }

  async has(sha256: string): Promise<boolean> {
    return (await this.blobs.stat(ARTIFACT_REGION, this.check(sha256))) !== null;
  }

  /** Marks an artifact used now (a release is being created from it): the retention sweep counts from here. */
  async touch(sha256: string): Promise<void> {
    await this.models.Artifact.updateOne(
      { _id: this.check(sha256) },
      { $set: { usedAt: new Date() }, $setOnInsert: { createdAt: new Date() } },
      { upsert: true },
    );
  }

  /** Packs a directory (GNU tar, reproducible options) and stores it; returns its content address. */
  async pack(dir: string): Promise<{ sha256: string; bytes: number; stored: boolean }> {
    if (!(await stat(dir).catch(() => null))?.isDirectory()) throw invalidConfiguration(`${dir} is not a directory`);
    const { stdout } = await run(
      'tar',
      [
        '--sort=name',
        '--mtime=@0',
        '--owner=0',
        '--group=0',
        '--numeric-owner',
        '--mode=u+rw,go+r',
        '--exclude=./node_modules',
        '-cf',
        '-',
        '-C',
        dir,
        '.',
      ],
      { encoding: 'buffer', maxBuffer: MAX_ARTIFACT_BYTES },
    );
    return this.put(stdout);
  }

  /** Stores archive bytes under their SHA-256 (kept when already there); bytes that are not a tar archive are refused. */
  async put(bytes: Buffer): Promise<{ sha256: string; bytes: number; stored: boolean }> {
    if (bytes.length > MAX_ARTIFACT_BYTES) throw invalidConfiguration('the bundle is larger than 64 MiB');
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    if (await this.has(sha256)) {
      await this.touch(sha256);
      return { sha256, bytes: bytes.length, stored: false };
    }
    await this.validate(bytes);
    const staged = await this.blobs.stage(Readable.from([bytes]), { maxBytes: MAX_ARTIFACT_BYTES });
    try {
      await this.blobs.commit(staged, ARTIFACT_REGION);
    } catch (e) {
      await this.blobs.discard(staged);
      throw e;
    }
    await this.touch(sha256);
    return { sha256, bytes: bytes.length, stored: true };
  }

  /** Only regular files and directories with relative paths: a link could point the unpacking outside the release. */
  private async validate(bytes: Buffer): Promise<void> {
    const dir = await mkdtemp(path.join(tmpdir(), 'artifact-'));
    const file = path.join(dir, 'a.tar');
    try {
      await writeFile(file, bytes);
      const names = (await run('tar', ['-tf', file], { maxBuffer: 16 * 1024 * 1024 })).stdout.split('\n').filter(Boolean);
      const kinds = (await run('tar', ['-tvf', file], { maxBuffer: 16 * 1024 * 1024 })).stdout.split('\n').filter(Boolean);
      const unsafe = (n: string) => n.startsWith('/') || n.split('/').includes('..');
      if (names.length === 0 || names.some(unsafe) || kinds.some((l) => !['-', 'd'].includes(l[0]))) throw new Error('unsafe');
    } catch {
      throw invalidConfiguration(
        'the artifact must be a tar archive of the bundle directory (files and directories, relative paths only)',
        { field: 'artifact' },
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  async read(sha256: string): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const c of this.blobs.read(ARTIFACT_REGION, this.check(sha256))) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  }

  /**
   * Unpacks an artifact from the blob store into `dest` (replaced whole). The archive is copied to a
   * file beside `dest` first: tar stops reading at the end-of-archive marker, before the record's
   * padding, so a pipe into it would close early.
   */
  async unpack(sha256: string, dest: string): Promise<void> {
    if (!(await this.has(sha256))) throw new Error(`artifact ${sha256} is not in the blob store`);
    await rm(dest, { recursive: true, force: true });
    await mkdir(dest, { recursive: true });
    const archive = `${dest}.${process.pid}.tar`;
    try {
      await pipeline(this.blobs.read(ARTIFACT_REGION, sha256), createWriteStream(archive));
      await run('tar', ['--no-same-owner', '-xf', archive, '-C', dest]);
    } finally {
      await rm(archive, { force: true });
    }
  }

  /**
   * Artifacts of the earlier layout (`<DATA_DIR>/commerce/artifacts/<sha256>.tar`, before 0160) move
   * into the blob store, so the releases that name them can still start; each file is removed once
   * its bytes are committed under the same address. Answers the addresses moved.
   */
  async importLegacy(dir: string): Promise<string[]> {
    const moved: string[] = [];
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      const m = /^([0-9a-f]{64})\.tar$/.exec(name);
      if (!m) continue;
      const file = path.join(dir, name);
      if (!(await this.has(m[1]))) {
        const staged = await this.blobs.stage(createReadStream(file), { maxBytes: MAX_ARTIFACT_BYTES });
        if (staged.sha256 !== m[1]) {
          await this.blobs.discard(staged);
          continue;
        }
        await this.blobs.commit(staged, ARTIFACT_REGION);
      }
      await this.touch(m[1]);
      await rm(file, { force: true });
      moved.push(m[1]);
    }
    return moved;
  }

  /**
   * The retention rule: artifacts last used before `now - ARTIFACT_RETENTION_MS` that no release
   * names are removed from the blob store (and their records). Answers the removed addresses.
   */
  async sweep(now = Date.now()): Promise<string[]> {
    const removed: string[] = [];
    const old = await this.models.Artifact.find({ usedAt: { $lt: new Date(now - ARTIFACT_RETENTION_MS) } }).lean();
    for (const a of old) {
      if (await this.models.Release.exists({ artifact: a._id })) continue;
      // Conditional on the record as read: an upload or deploy since then keeps the artifact.
      const gone = await this.models.Artifact.deleteOne({ _id: a._id, usedAt: a.usedAt });
      if (gone.deletedCount !== 1) continue;
      await this.blobs.remove(ARTIFACT_REGION, a._id);
      removed.push(a._id);
    }
    return removed;
  }
}
