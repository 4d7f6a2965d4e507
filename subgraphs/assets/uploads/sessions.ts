import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Readable } from 'node:stream';
import { PlatformError, badRequest, notFound } from '../../../core/errors';
import { hashInput } from '../../../core/idempotency';
import { newId } from '../../../core/ids';
import { isDuplicateKey } from '../../../core/mongo';
import type { Principal } from '../../../core/principal';
import { BlobTooLargeError } from '../../../core/blobs/blob-store';
import type { AssetAccess } from './asset-access';
import { parseUploadFields } from './uploads';
import { type AssetDoc, type SessionDoc, partCount } from '../records';

/** Spec 8 leaves these numbers open (docs/spec-decisions.md): */
/** A session can be used for 24 hours. */
export const SESSION_TTL_MS = 24 * 60 * 60 * 1000;
/** Default part size 8 MiB; parts between 1 MiB (except the last) and 64 MiB. */
export const DEFAULT_PART_SIZE = 8 * 1024 ** 2;
export const MIN_PART_SIZE = 1024 ** 2;
export const MAX_PART_SIZE = 64 * 1024 ** 2;
/** At most 10,000 parts per session. */
export const MAX_PARTS = 10_000;

export interface SessionInput {
  mode?: string;
  fileName: string;
  fileSize: number;
  mimeType?: string | null;
  checksumSha256?: string | null;
  partSize?: number | null;
  bucket?: string;
  key?: string;
  folder?: string;
  visibility?: string;
  cacheControl?: string;
  metadata?: Record<string, unknown> | null;
}

const sessionNotFound = () => notFound('assets.upload_session_not_found', 'upload session not found');

/**
 * Upload sessions: a single signed PUT or a chunked upload whose parts arrive in any order and in
 * parallel, each checked against its `X-Content-SHA256`. Parts live with the session until
 * `complete` streams them in order into one staged blob, which then goes through exactly the
 * checks of a multipart upload. The signed address is a capability: its path carries an HMAC of the
 * session id, so the byte routes need no bearer key.
 */
export class UploadSessions {
  constructor(private readonly assets: AssetAccess) {}

  private mac(sessionId: string): string {
    return createHmac('sha256', this.assets.cfg.INTERNAL_SIGNING_KEY).update(`assets-session:${sessionId}`).digest('base64url');
  }

  uploadUrl(sessionId: string): string {
    return `${this.assets.cfg.baseUrl}/api/v1/assets/uploads/${sessionId}.${this.mac(sessionId)}`;
  }

  /** The session a capability names (its signature checked), or null. */
  async byCapability(capability: string): Promise<SessionDoc | null> {
    const [id, mac] = capability.split('.');
    if (!id || !mac) return null;
    const expected = Buffer.from(this.mac(id));
    if (mac.length !== expected.length || !timingSafeEqual(Buffer.from(mac), expected)) return null;
    const s = await this.assets.m.Session.findById(id).lean<SessionDoc>().exec();
    // A signed URL is the key's authority handed on: it ends when the key is revoked (decision 0099).
    if (s && !(await this.assets.keyLive(s.accountId, s.keyId))) return null;
    return s;
  }

  async create(p: Principal | null, input: SessionInput, idempotencyKey: string | null | undefined): Promise<SessionDoc> {
    const caller = this.assets.writer(p);
    const mode = input.mode === 'chunked' ? 'chunked' : 'single';
    // The policy's limit bounded by the plan: no session for a file the plan could never hold.
    const maxBytes = await this.assets.uploads.largestFile(caller.accountId, caller.plan);
    if (!Number.isInteger(input.fileSize) || input.fileSize < 0)
      throw badRequest('validation_failed', 'file_size must be a byte count');
    if (input.fileSize > maxBytes) {
      throw new PlatformError('assets.policy_violation', 400, `a file may be at most ${maxBytes} bytes`, { limit: maxBytes });
    }
    const partSize = input.partSize ?? DEFAULT_PART_SIZE;
    if (mode === 'chunked' && (partSize < MIN_PART_SIZE || partSize > MAX_PART_SIZE)) {
      throw badRequest('validation_failed', `part_size must be ${MIN_PART_SIZE} to ${MAX_PART_SIZE} bytes`);
    }
    if (mode === 'chunked' && Math.ceil(input.fileSize / partSize) > MAX_PARTS) {
      throw badRequest('validation_failed', `a session has at most ${MAX_PARTS} parts; raise part_size`);
    }
    if (input.checksumSha256 && !/^[0-9a-fA-F]{64}$/.test(input.checksumSha256)) {
      throw badRequest('validation_failed', 'checksum_sha256 must be 64 hex digits');
    }
    const fields: Record<string, string> = {};
    if (input.bucket) fields.bucket = input.bucket;
    if (input.key) fields.key = input.key;
    if (input.folder) fields.folder = input.folder;
    if (input.visibility) fields.visibility = input.visibility;
    if (input.cacheControl) fields.cache_control = input.cacheControl;
    if (input.metadata) fields.metadata = JSON.stringify(input.metadata);
    if (input.checksumSha256) fields.checksum_sha256 = input.checksumSha256.toLowerCase();
    parseUploadFields(fields);
    const now = new Date();
    const doc: SessionDoc = {
      _id: newId(),
      accountId: caller.accountId,
      keyId: caller.keyId,
      plan: caller.plan,
      mode,
      fileName: input.fileName,
      fileSize: input.fileSize,
      mimeType: input.mimeType ?? null,
      checksumSha256: input.checksumSha256?.toLowerCase() ?? null,
      partSize: mode === 'chunked' ? partSize : input.fileSize,
      fields,
      status: 'open',
      parts: [],
      assetId: null,
      requestHash: idempotencyKey ? hashInput({ ...input, mode }) : null,
      expiresAt: new Date(now.getTime() + SESSION_TTL_MS),
      createdAt: now,
      updatedAt: now,
    };
    if (idempotencyKey) doc.idempotencyScope = `${caller.accountId}:${idempotencyKey}`;
    // The quota is reserved before any byte can arrive (402 when there is no room), and given back
    // if no session comes of it (decision 0098).
    await this.assets.uploads.reserve(caller, input.fileSize);
    doc.reservedBytes = input.fileSize;
    try {
      await this.assets.m.Session.create(doc);
      return doc;
    } catch (e) {
      await this.assets.uploads.release(caller.accountId, input.fileSize);
      if (!isDuplicateKey(e) || !idempotencyKey) throw e;
      const existing = await this.assets.m.Session.findOne({ idempotencyScope: doc.idempotencyScope }).lean<SessionDoc>().exec();
      if (!existing) throw e;
      if (existing.requestHash !== doc.requestHash) {
        throw new PlatformError('assets.idempotency_conflict', 409, 'this Idempotency-Key was used with a different request');
      }
      return existing;
    }
  }

  async get(p: Principal | null, id: string): Promise<SessionDoc> {
    const { accountId } = this.assets.reader(p);
    const s = await this.assets.m.Session.findOne({ _id: id, accountId }).lean<SessionDoc>().exec();
    if (!s) throw sessionNotFound();
    return s;
  }

  private expectedPartSize(s: SessionDoc, n: number): number {
    const count = partCount(s);
    if (n < 1 || n > count) throw badRequest('validation_failed', `part numbers run from 1 to ${count}`);
    return n < count ? s.partSize : s.fileSize - s.partSize * (count - 1);
  }

  private open(s: SessionDoc): void {
    if (s.status !== 'open' || s.expiresAt.getTime() <= Date.now()) {
      throw new PlatformError(
        'assets.upload_session_closed',
        409,
        `the upload session is ${s.status === 'open' ? 'expired' : s.status}`,
      );
    }
  }

  /** One part, checked against its size and `X-Content-SHA256` (422 when the bytes differ). */
  async putPart(s: SessionDoc, n: number, sha256: string | undefined, body: Readable): Promise<SessionDoc> {
    this.open(s);
    if (s.mode !== 'chunked') throw badRequest('validation_failed', 'this session takes a single PUT');
    if (!sha256 || !/^[0-9a-fA-F]{64}$/.test(sha256))
      throw badRequest('validation_failed', 'send X-Content-SHA256 with the part');
    const size = this.expectedPartSize(s, n);
    let got: { sha256: string; size: number };
    try {
      got = await this.assets.blobs.putPart(s._id, n, body, { maxBytes: size });
    } catch (e) {
      // Cut at the part's size: nothing of it is kept.
      if (e instanceof BlobTooLargeError) {
        throw new PlatformError('assets.payload_too_large', 413, `part ${n} must be ${size} bytes`, { limit: size });
      }
      throw e;
    }
    if (got.size !== size) throw badRequest('validation_failed', `part ${n} must be ${size} bytes, got ${got.size}`);
    if (got.sha256 !== sha256.toLowerCase()) {
      throw new PlatformError('assets.checksum_mismatch', 422, `part ${n} does not match X-Content-SHA256`, {
        part: n,
        received: got.sha256,
      });
    }
    const part = { number: n, size: got.size, sha256: got.sha256, receivedAt: new Date() };
    // Replace any earlier copy of this part, in one update per step (parts arrive in parallel).
    await this.assets.m.Session.updateOne({ _id: s._id, status: 'open' }, { $pull: { parts: { number: n } } });
    await this.assets.m.Session.updateOne(
      { _id: s._id, status: 'open' },
      { $push: { parts: part }, $set: { updatedAt: new Date() } },
    );
    return (await this.assets.m.Session.findById(s._id).lean<SessionDoc>().exec()) as SessionDoc;
  }

  /** The single-PUT body: staged and recorded as an upload (the session completes with it). */
  async putSingle(s: SessionDoc, body: Readable): Promise<AssetDoc> {
    this.open(s);
    if (s.mode !== 'single') throw badRequest('validation_failed', 'this session takes parts: PUT {url}/parts/{n}');
    // Cut at the declared size (413, nothing kept): the body is never read past `file_size`.
    const staged = await this.assets.uploads.stage(s.accountId, body, { maxBytes: s.fileSize });
    try {
      return await this.finish(s, staged);
    } finally {
      await this.assets.blobs.discard(staged).catch(() => undefined);
    }
  }

  private principalOf(s: SessionDoc): Principal {
    return {
      accountId: s.accountId,
      accountSlug: '',
      plan: s.plan === 'pro' ? 'pro' : 'free',
      keyId: s.keyId,
      role: 'member',
      scopes: [],
    };
  }

  private async finish(s: SessionDoc, staged: Awaited<ReturnType<AssetAccess['uploads']['stage']>>): Promise<AssetDoc> {
    if (staged.size !== s.fileSize) throw badRequest('validation_failed', `expected ${s.fileSize} bytes, got ${staged.size}`);
    // Claim the session first, so two completes cannot both make an asset.
    const claimed = await this.assets.m.Session.updateOne(
      { _id: s._id, status: 'open' },
      { $set: { status: 'completed', updatedAt: new Date() } },
    );
    if (claimed.modifiedCount !== 1)
      throw new PlatformError('assets.upload_session_closed', 409, 'the upload session is already completed');
    try {
      const reserved = (s.reservedBytes ?? 0) >= staged.size;
      const asset = await this.assets.uploads.create(this.principalOf(s), staged, s.fileName, parseUploadFields(s.fields), {
        reserved,
      });
      await this.assets.m.Session.updateOne({ _id: s._id }, { $set: { assetId: asset._id } });
      await this.assets.blobs.dropSession(s._id);
      this.assets.nudge();
      return asset;
    } catch (e) {
      await this.assets.m.Session.updateOne({ _id: s._id, status: 'completed' }, { $set: { status: 'open' } });
      throw e;
    }
  }

  /** Assembles the parts in order and checks the whole file (422 on a checksum mismatch). */
  async complete(p: Principal | null, id: string): Promise<AssetDoc> {
    const caller = this.assets.writer(p);
    const s = await this.get(caller, id);
    this.open(s);
    if (s.mode !== 'chunked') throw badRequest('validation_failed', 'a single-PUT session completes with its PUT');
    const count = partCount(s);
    const have = new Set(s.parts.map((x) => x.number));
    const missing = Array.from({ length: count }, (_, i) => i + 1).filter((n) => !have.has(n));
    if (missing.length > 0)
      throw badRequest('assets.parts_missing', `parts missing: ${missing.slice(0, 20).join(', ')}`, { missing });
    const staged = await this.assets.blobs.assemble(
      s._id,
      Array.from({ length: count }, (_, i) => i + 1),
    );
    try {
      return await this.finish(s, staged);
    } finally {
      await this.assets.blobs.discard(staged).catch(() => undefined);
    }
  }

  async cancel(p: Principal | null, id: string): Promise<SessionDoc> {
    const caller = this.assets.writer(p);
    const s = await this.get(caller, id);
    const res = await this.assets.m.Session.findOneAndUpdate(
      { _id: id, accountId: caller.accountId, status: 'open' },
      { $set: { status: 'cancelled', parts: [], updatedAt: new Date() } },
      { new: true },
    )
      .lean<SessionDoc>()
      .exec();
    if (!res) throw new PlatformError('assets.upload_session_closed', 409, `the upload session is ${s.status}`);
    await this.assets.uploads.release(caller.accountId, s.reservedBytes ?? 0);
    await this.assets.blobs.dropSession(id);
    return res;
  }

  /** The expiry timer's work: open sessions past `expiresAt` expire and lose their parts. */
  async expireDue(now = new Date()): Promise<number> {
    const due = await this.assets.m.Session.find(
      { status: 'open', expiresAt: { $lte: now } },
      { _id: 1, accountId: 1, reservedBytes: 1 },
    )
      .limit(100)
      .lean()
      .exec();
    let n = 0;
    for (const d of due) {
      const res = await this.assets.m.Session.updateOne(
        { _id: d._id, status: 'open' },
        { $set: { status: 'expired', parts: [], updatedAt: now } },
      );
      if (res.modifiedCount === 1) {
        await this.assets.uploads.release(String(d.accountId), Number(d.reservedBytes ?? 0));
        await this.assets.blobs.dropSession(String(d._id));
        n++;
      }
    }
    return n;
  }
}
