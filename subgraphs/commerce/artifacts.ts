import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import type { Model } from 'mongoose';
import { type BlobStore, BlobTooLargeError } from '../../core/blobs/blob-store';
import { StagingFile } from '../../core/blobs/staging-file';
import { insertOne, isDuplicateKey } from '../../core/mongo';
import type { Plan } from '../../core/principal';
import { commerceError, invalidConfiguration } from './errors';
import type { ArtifactDoc, ArtifactOwnerDoc, ReleaseDoc } from './model';

const run = promisify(execFile);

/** Largest bundle archive accepted: 64 MiB. */
export const MAX_ARTIFACT_BYTES = 64 * 1024 * 1024;
export const ARTIFACT_ID = /^[0-9a-f]{64}$/;
/** The blob store's region (folder, key prefix) that holds release artifacts. */
export const ARTIFACT_REGION = 'commerce-artifacts';
/**
 * Retention (docs/spec-decisions.md, commerce release cleanup): an account's hold on an artifact
 * that none of its releases names ends once the account last uploaded or deployed it more than
 * 24 h ago; the bytes go once no account holds them and no release names them.
 */
export const ARTIFACT_RETENTION_MS = 24 * 60 * 60 * 1000;
/** An upload file untouched this long belongs to a process that died mid-upload. */
export const STALE_UPLOAD_MS = 60 * 60 * 1000;

/** What an account may hold at once (decision 0271): artifacts and their bytes, counted per account. */
export interface ArtifactQuota {
  bytes: number;
  count: number;
}
/** Defaults per plan (`COMMERCE_ARTIFACT_QUOTA_{BYTES,COUNT}_{FREE,PRO}` override them). */
export const DEFAULT_ARTIFACT_QUOTA: Record<Plan, ArtifactQuota> = {
  free: { bytes: 2 * 1024 ** 3, count: 100 },
  pro: { bytes: 50 * 1024 ** 3, count: 2000 },
};

/** Who an upload is for: the account that will hold it, and its quota (none for the operator's CLI). */
export interface ArtifactOwner {
  accountId: string;
  quota: ArtifactQuota | null;
}

export interface StoredArtifact {
  sha256: string;
  bytes: number;
}

const ownerKey = (accountId: string, sha256: string) => `${accountId}:${sha256}`;

const tooLarge = () =>
  commerceError('COMMERCE_PAYLOAD_TOO_LARGE', 'the bundle is larger than 64 MiB', { max_bytes: MAX_ARTIFACT_BYTES });

/**
 * Streams `source` into `sink`. Unlike `pipeline`, a refusal does not destroy the source: the
 * caller still answers on the request it came from (and drains or closes it).
 */
function receive(source: Readable, sink: StagingFile): Promise<void> {
  return new Promise((resolve, reject) => {
    let failure: Error | null = null;
    const fail = (e: Error) => {
      failure ??= e instanceof BlobTooLargeError ? tooLarge() : e;
      source.unpipe(sink);
      sink.destroy();
    };
    sink.once('error', fail);
    source.once('error', fail);
    // The sink closes its file on 'close', after the last write (or removes it after a failure).
    sink.once('close', () => (!failure && sink.writableFinished ? resolve() : reject(failure ?? new Error('upload aborted'))));
    source.pipe(sink);
  });
}

/**
 * Release artifacts (docs/decisions/0130-commerce-runtime.md, 0160, 0271): a bundle directory packed
 * into a tar archive whose bytes depend only on the files, kept in the blob store (core/blobs/;
 * filesystem or S3) under its SHA-256, so the same bytes are stored once. Each account holds the
 * artifacts it uploaded (`commerce_artifact_owners`) and may release only those; the holds count
 * against its quota. An upload is streamed to a file (hashed while it is written), checked, and
 * only then stored; it answers the same whether or not the bytes were there before.
 */
export class ArtifactStore {
  constructor(
    private readonly blobs: BlobStore,
    private readonly models: {
      Artifact: Model<ArtifactDoc>;
      ArtifactOwner: Model<ArtifactOwnerDoc>;
      Release: Model<ReleaseDoc>;
    },
    /** Where uploads are written while they arrive (a folder of the platform's own, mode 0700). */
    readonly uploadsDir: string,
  ) {}

  private check(sha256: string): string {
    if (!ARTIFACT_ID.test(sha256)) throw invalidConfiguration('artifact must be a SHA-256 in hex', { field: 'artifact' });
    return sha256;
  }

  async has(sha256: string): Promise<boolean> {
    return (await this.blobs.stat(ARTIFACT_REGION, this.check(sha256))) !== null;
  }

  /**
   * A release is being created from an artifact by `accountId`: answers whether the account holds it
   * (and its bytes are there), and marks it used now (the retention counts from here). An artifact
   * the account does not hold answers exactly as one that does not exist.
   */
  async take(accountId: string, sha256: string): Promise<boolean> {
    this.check(sha256);
    const now = new Date();
    const held = await this.models.ArtifactOwner.updateOne({ _id: ownerKey(accountId, sha256) }, { $set: { usedAt: now } });
    if (held.matchedCount !== 1) return false;
    await this.record(sha256, now);
    return this.has(sha256);
  }

  private async record(sha256: string, now: Date, bytes?: number): Promise<void> {
    await this.models.Artifact.updateOne(
      { _id: sha256 },
      { $set: { usedAt: now, ...(bytes === undefined ? {} : { bytes }) }, $setOnInsert: { createdAt: now } },
      { upsert: true },
    );
  }

  /** Packs a directory (GNU tar, reproducible options) into a file and stores it for `owner`. */
  async pack(dir: string, owner: ArtifactOwner): Promise<StoredArtifact> {
    if (!(await stat(dir).catch(() => null))?.isDirectory()) throw invalidConfiguration(`${dir} is not a directory`);
    const file = await this.uploadFile();
    try {
      await run('tar', [
        '--sort=name',
        '--mtime=@0',
        '--owner=0',
        '--group=0',
        '--numeric-owner',
        '--mode=u+rw,go+r',
        '--exclude=./node_modules',
        '-cf',
        file,
        '-C',
        dir,
        '.',
      ]);
      return await this.put(createReadStream(file), owner);
    } finally {
      await rm(file, { force: true });
    }
  }

  private async uploadFile(): Promise<string> {
    await mkdir(this.uploadsDir, { recursive: true, mode: 0o700 });
    return path.join(this.uploadsDir, `${randomUUID()}.tar`);
  }

  /**
   * Stores an archive arriving as a stream for `owner`: written to a file while it is hashed and
   * counted (at most 64 MiB, 413 past it), refused when it is not a safe tar archive (422), counted
   * against the owner's quota (413 `COMMERCE_ARTIFACT_QUOTA_EXCEEDED`), then staged and committed.
   * The work and the answer are the same for bytes the store already holds (no existence oracle).
   */
  async put(source: Readable, owner: ArtifactOwner): Promise<StoredArtifact> {
    const file = await this.uploadFile();
    try {
      const sink = new StagingFile(file, MAX_ARTIFACT_BYTES);
      await receive(source, sink);
      const sha256 = sink.digest();
      const bytes = sink.size;
      await this.validate(file);
      const claimed = await this.claim(owner, sha256, bytes);
      try {
        await this.record(sha256, new Date(), bytes);
        // Committed every time (a blob already there is kept): the same work whoever stored it first.
        const staged = await this.blobs.stage(createReadStream(file), { maxBytes: MAX_ARTIFACT_BYTES });
        try {
          await this.blobs.commit(staged, ARTIFACT_REGION);
        } catch (e) {
          await this.blobs.discard(staged);
          throw e;
        }
      } catch (e) {
        if (claimed) await this.models.ArtifactOwner.deleteOne({ _id: ownerKey(owner.accountId, sha256) }).catch(() => undefined);
        throw e;
      }
      return { sha256, bytes };
    } finally {
      await rm(file, { force: true });
    }
  }

  /**
   * The owner's hold on the artifact: refreshed when it exists (free: the quota already counts it),
   * else made within the quota. Two uploads racing for the last room may both be refused, never both
   * let through: each checks again after its hold is written. Answers whether the hold is new.
   */
  private async claim(owner: ArtifactOwner, sha256: string, bytes: number): Promise<boolean> {
    const _id = ownerKey(owner.accountId, sha256);
    const now = new Date();
    const refresh = async () =>
      (await this.models.ArtifactOwner.updateOne({ _id }, { $set: { usedAt: now } })).matchedCount === 1;
    if (await refresh()) return false;
    if (owner.quota) await this.withinQuota(owner.accountId, owner.quota, { bytes, count: 1 });
    try {
      await insertOne(this.models.ArtifactOwner, {
        _id,
        accountId: owner.accountId,
        artifact: sha256,
        bytes,
        createdAt: now,
        usedAt: now,
      });
    } catch (e) {
      if (isDuplicateKey(e) && (await refresh())) return false;
      throw e;
    }
    if (owner.quota) {
      try {
        await this.withinQuota(owner.accountId, owner.quota, { bytes: 0, count: 0 });
      } catch (e) {
        await this.models.ArtifactOwner.deleteOne({ _id });
        throw e;
      }
    }
    return true;
  }

  /** What an account holds: its artifacts and their bytes. */
  async usage(accountId: string): Promise<ArtifactQuota> {
    const holds = await this.models.ArtifactOwner.find({ accountId }, { bytes: 1 }).lean();
    return { count: holds.length, bytes: holds.reduce((n, h) => n + (h.bytes ?? 0), 0) };
  }

  private async withinQuota(accountId: string, quota: ArtifactQuota, adding: ArtifactQuota): Promise<void> {
    const used = await this.usage(accountId);
    if (used.count + adding.count <= quota.count && used.bytes + adding.bytes <= quota.bytes) return;
    throw commerceError(
      'COMMERCE_ARTIFACT_QUOTA_EXCEEDED',
      `the account's artifact quota (${quota.count} artifacts, ${quota.bytes} bytes) has no room for this bundle; ` +
        'an artifact no release of the account names is let go 24 h after its last upload or deploy',
      {
        quota_artifacts: quota.count,
        quota_bytes: quota.bytes,
        used_artifacts: used.count,
        used_bytes: used.bytes,
        artifact_bytes: adding.bytes,
      },
    );
  }

  /** Only regular files and directories with relative paths: a link could point the unpacking outside the release. */
  private async validate(file: string): Promise<void> {
    try {
      const names = (await run('tar', ['-tf', file], { maxBuffer: 16 * 1024 * 1024 })).stdout.split('\n').filter(Boolean);
      const kinds = (await run('tar', ['-tvf', file], { maxBuffer: 16 * 1024 * 1024 })).stdout.split('\n').filter(Boolean);
      const unsafe = (n: string) => n.startsWith('/') || n.split('/').includes('..');
      if (names.length === 0 || names.some(unsafe) || kinds.some((l) => !['-', 'd'].includes(l[0]))) throw new Error('unsafe');
    } catch {
      throw invalidConfiguration(
        'the artifact must be a tar archive of the bundle directory (files and directories, relative paths only)',
        { field: 'artifact' },
      );
    }
  }

  /**
   * An artifact's bytes from the blob store (the tar archive a node's agent downloads and unpacks:
   * dataplane/agent/release-executor.ts) and their length.
   */
  async read(sha256: string): Promise<{ stream: Readable; bytes: number }> {
    const bytes = await this.blobs.stat(ARTIFACT_REGION, this.check(sha256));
    if (bytes === null) throw commerceError('COMMERCE_NOT_FOUND', `artifact ${sha256} is not in the blob store`);
    return { stream: this.blobs.read(ARTIFACT_REGION, sha256), bytes };
  }

  /**
   * Artifacts of the earlier layout (`<DATA_DIR>/commerce/artifacts/<sha256>.tar`, before 0160) move
   * into the blob store, so the releases that name them can still start; each file is removed once
   * its bytes are committed under the same address. Answers the addresses moved. Their holders are
   * set by `adoptUnowned`.
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
      await this.record(m[1], new Date());
      await rm(file, { force: true });
      moved.push(m[1]);
    }
    return moved;
  }

  /**
   * Artifacts recorded before ownership (decision 0271; their record has no `bytes`) are held by
   * the accounts whose releases name them, from their last use; one no release names has no holder
   * and goes with the retention rule. Answers how many records were adopted.
   */
  async adoptUnowned(): Promise<number> {
    let adopted = 0;
    for (const a of await this.models.Artifact.find({ bytes: null }).lean()) {
      const size = await this.blobs.stat(ARTIFACT_REGION, a._id);
      if (size === null) continue;
      const releases = await this.models.Release.find({ artifact: a._id }, { accountId: 1 }).lean();
      for (const accountId of new Set(releases.map((r) => r.accountId))) {
        await this.models.ArtifactOwner.updateOne(
          { _id: ownerKey(accountId, a._id) },
          { $setOnInsert: { accountId, artifact: a._id, bytes: size, createdAt: a.createdAt, usedAt: a.usedAt } },
          { upsert: true },
        );
      }
      await this.models.Artifact.updateOne({ _id: a._id }, { $set: { bytes: size } });
      adopted++;
    }
    return adopted;
  }

  /**
   * The retention rule, per owner: a hold last used before `now - ARTIFACT_RETENTION_MS` that no
   * release of its account names ends (the account's quota gets the room back); then an artifact
   * no account holds and no release names, last used before the same time, is removed from the blob
   * store (and its record). Upload files left by a dead process go too. Answers the removed addresses.
   */
  async sweep(now = Date.now()): Promise<string[]> {
    const before = new Date(now - ARTIFACT_RETENTION_MS);
    const { Artifact, ArtifactOwner, Release } = this.models;
    for (const h of await ArtifactOwner.find({ usedAt: { $lt: before } }).lean()) {
      if (await Release.exists({ artifact: h.artifact, accountId: h.accountId })) continue;
      // Conditional on the hold as read: an upload or deploy since then keeps it.
      await ArtifactOwner.deleteOne({ _id: h._id, usedAt: h.usedAt });
    }
    const removed: string[] = [];
    for (const a of await Artifact.find({ usedAt: { $lt: before } }).lean()) {
      if (await Release.exists({ artifact: a._id })) continue;
      if (await ArtifactOwner.exists({ artifact: a._id })) continue;
      const gone = await Artifact.deleteOne({ _id: a._id, usedAt: a.usedAt });
      if (gone.deletedCount !== 1) continue;
      await this.blobs.remove(ARTIFACT_REGION, a._id);
      removed.push(a._id);
    }
    await this.sweepUploads(now);
    return removed;
  }

  private async sweepUploads(now: number): Promise<void> {
    for (const name of await readdir(this.uploadsDir).catch(() => [] as string[])) {
      const file = path.join(this.uploadsDir, name);
      const s = await stat(file).catch(() => null);
      if (s && now - s.mtimeMs > STALE_UPLOAD_MS) await rm(file, { force: true });
    }
  }
}
