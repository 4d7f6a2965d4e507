import type { FastifyRequest } from 'fastify';
import type { Model } from 'mongoose';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { PassThrough, Readable } from 'node:stream';
import rangeParser from 'range-parser';
import type { BlobStore, ByteRange, StagedBlob } from '../core/blobs/blob-store';
import { PlatformError, badRequest } from '../core/errors';
import { type AgentUpload, type HeldUpload, UPLOAD_LENGTH_HEADER, UPLOAD_OFFSET_HEADER } from '../dataplane/agent/wire';
import { RECOVERY_POINT_REGION } from '../dataplane/site-backup';
import type { NodeTaskDoc } from './tasks';

/**
 * A recovery point's part transfers that resume (docs/decisions/0390-resumable-part-transfers.md).
 * A download answers one byte range (RFC 9110 `Range`: 206 and `Content-Range`, 416 for a range the
 * part cannot satisfy). An upload is kept as it arrives, in pieces of the blob store's upload
 * sessions (one session per task and part), each written whole and counted on the task record
 * (`partUpload.held`); a broken upload leaves what it sent up to its last whole piece, and the agent
 * sends the rest from there (`Upload-Offset`, as tus does). The SHA-256 and the length are checked on
 * the whole part once its last byte is in, before it is kept.
 */

/** The bytes of one piece of a held upload: a resumed upload starts at a piece's start. */
export const PART_PIECE_BYTES = 8 * 1024 * 1024;

/**
 * The blob store's upload session of a task's part: named as the store names sessions (a UUID's
 * shape), from the hash of the task and the part, so each upload of a part has its own.
 */
export function partSession(taskId: string, sha256: string): string {
  const h = createHash('sha256').update(`${taskId}\n${sha256}`).digest('hex');
  return [h.slice(0, 8), h.slice(8, 12), h.slice(12, 16), h.slice(16, 20), h.slice(20, 32)].join('-');
}

/**
 * The one byte range of a part's download that `header` asks for, or null for the whole part. A
 * range the part cannot satisfy (past its end, several, not bytes, not a range) is 416 with the
 * part's size (`Content-Range: bytes *\/size`).
 */
export function partRange(header: string | undefined, size: number): ByteRange | null {
  if (header === undefined) return null;
  const r = rangeParser(size, header, { combine: true });
  if (Array.isArray(r) && r.type === 'bytes' && r.length === 1) return { start: r[0].start, end: r[0].end };
  throw new PlatformError('range_not_satisfiable', 416, `the part has ${size} bytes: no range ${header} of it`, { size });
}

const mismatch = (message: string) => new PlatformError('part_mismatch', 422, message);
const offsetMismatch = (held: number) =>
  new PlatformError('upload_offset_mismatch', 409, `the platform holds ${held} bytes of this part: send the rest from there`, {
    offset: held,
  });

/** A task's part uploads: what is held, receiving the rest, keeping or dropping the whole. */
export class PartUploads {
  constructor(
    private readonly tasks: Model<NodeTaskDoc>,
    private readonly store: BlobStore,
    private readonly pieceBytes = PART_PIECE_BYTES,
  ) {}

  /** What the task holds of `sha256`'s upload (0 bytes when it holds another part's or none). */
  held(task: NodeTaskDoc, sha256: string): HeldUpload {
    const up = task.partUpload;
    return up?.sha256 === sha256 ? { sha256, offset: up.held, length: up.length } : { sha256, offset: 0, length: null };
  }

  /**
   * Receives the bytes of `up` from its offset to the part's end, kept piece by piece; when the last is
   * in, checks the whole part (else 422 `part_mismatch`, nothing kept) and keeps it in the recovery
   * store. An offset other than what the task holds is 409 `upload_offset_mismatch`; an upload from 0
   * starts over (what an earlier one left is dropped).
   */
  async receive(task: NodeTaskDoc, sha256: string, up: Required<AgentUpload>): Promise<StagedBlob> {
    const { offset, length } = up;
    const session = partSession(task._id, sha256);
    if (offset === 0) {
      await this.drop(task);
      await this.tasks.updateOne({ _id: task._id }, { $set: { partUpload: { sha256, length, held: 0 } } });
    } else {
      const held = this.held(task, sha256);
      if (held.offset !== offset || held.length !== length) throw offsetMismatch(held.offset);
    }
    await this.pieces(task._id, session, sha256, up).catch(async (e: unknown) => {
      // Bytes that are not the part stated keep nothing; a broken upload keeps its whole pieces.
      if (e instanceof PlatformError && e.code === 'part_mismatch') await this.forget(task._id, session);
      throw e;
    });
    const count = Math.ceil(length / this.pieceBytes);
    const staged =
      count === 0
        ? await this.store.stage(Readable.from([]), { maxBytes: 0 })
        : await this.store.assemble(
            session,
            Array.from({ length: count }, (_, n) => n),
            { maxBytes: length },
          );
    await this.forget(task._id, session);
    if (staged.sha256 !== sha256 || staged.size !== length) {
      await this.store.discard(staged);
      throw mismatch(`the bytes hash to ${staged.sha256} (${staged.size} bytes), not ${sha256} (${length})`);
    }
    await this.store.commit(staged, RECOVERY_POINT_REGION);
    return staged;
  }

  /**
   * Streams the request's bytes into whole pieces of the session, each counted on the task once
   * written (only from the count it started at: two requests never both extend it). A stream that
   * breaks keeps the pieces it completed; the piece it was in is not kept.
   */
  private async pieces(taskId: string, session: string, sha256: string, up: Required<AgentUpload>): Promise<void> {
    const P = this.pieceBytes;
    let at = up.offset;
    let piece: { pass: PassThrough; done: Promise<unknown>; start: number; end: number } | null = null;
    const open = () => {
      const n = Math.floor(at / P);
      const pass = new PassThrough();
      const done = this.store.putPart(session, n, pass, { maxBytes: P });
      done.catch(() => undefined);
      return { pass, done, start: n * P, end: Math.min((n + 1) * P, up.length) };
    };
    try {
      for await (const chunk of up.stream as AsyncIterable<Buffer>) {
        let c = chunk;
        while (c.length > 0) {
          if (at >= up.length) throw mismatch(`more than the ${up.length} bytes stated`);
          piece ??= open();
          const take = c.subarray(0, piece.end - at);
          c = c.subarray(take.length);
          at += take.length;
          if (!piece.pass.write(take)) await Promise.race([once(piece.pass, 'drain'), piece.done]);
          if (at === piece.end) {
            piece.pass.end();
            await piece.done;
            const from = piece.start;
            piece = null;
            const res = await this.tasks.updateOne(
              { _id: taskId, 'partUpload.sha256': sha256, 'partUpload.held': from },
              { $set: { 'partUpload.held': at } },
            );
            if (res.matchedCount !== 1) throw offsetMismatch(from);
          }
        }
      }
    } catch (e) {
      piece?.pass.destroy(e as Error);
      await piece?.done.catch(() => undefined);
      up.stream.resume();
      if (e instanceof PlatformError) throw e;
      throw new PlatformError('upload_interrupted', 400, `the upload broke after byte ${at}: ${(e as Error).message}`);
    }
    if (at < up.length) {
      piece?.pass.destroy(new Error('short'));
      await piece?.done.catch(() => undefined);
      throw mismatch(`fewer than the ${up.length} bytes stated (${at})`);
    }
  }

  /** Drops what the task holds of an upload (its session and its count): a task that ends or expires. */
  async drop(task: Pick<NodeTaskDoc, '_id' | 'partUpload'>): Promise<void> {
    if (task.partUpload) await this.forget(task._id, partSession(task._id, task.partUpload.sha256));
  }

  private async forget(taskId: string, session: string): Promise<void> {
    await this.store.dropSession(session);
    await this.tasks.updateOne({ _id: taskId }, { $unset: { partUpload: 1 } });
  }

  /** Drops the uploads finished tasks still hold (a task failed by the platform, not by its agent). */
  async sweep(): Promise<number> {
    const left = await this.tasks
      .find({ status: { $in: ['succeeded', 'failed'] }, partUpload: { $exists: true } }, { partUpload: 1 })
      .lean();
    for (const t of left) await this.drop(t);
    return left.length;
  }
}

/** An upload's offset and whole length, checked: the request carries the rest of the part from `offset`. */
export function uploadExtent(up: AgentUpload, max: number): Required<AgentUpload> {
  const offset = up.offset ?? 0;
  const length = up.length ?? offset + up.size;
  for (const n of [up.size, offset, length])
    if (!Number.isSafeInteger(n) || n < 0)
      throw badRequest('invalid_request', 'an upload states its length (content-length, upload-offset, upload-length)');
  if (length > max) throw new PlatformError('part_too_large', 413, `a part may have at most ${max} bytes`);
  if (offset + up.size !== length)
    throw badRequest('invalid_request', `an upload from byte ${offset} sends the rest of the part: ${length - offset} bytes`);
  return { stream: up.stream, size: up.size, offset, length };
}

/**
 * A call's body as the dispatcher takes it: JSON; a part's upload, its bytes streaming through (the
 * bridge's parser) with their length, offset and the part's length (decision 0390); a download's `Range`.
 */
export function partCallBody(req: FastifyRequest): unknown {
  const n = (h: string) => {
    const v = req.headers[h];
    return typeof v === 'string' ? Number(v) : undefined;
  };
  if (req.body instanceof Readable) {
    const [offset, length] = [n(UPLOAD_OFFSET_HEADER), n(UPLOAD_LENGTH_HEADER)];
    return {
      stream: req.body,
      size: n('content-length') ?? NaN,
      ...(offset !== undefined ? { offset } : {}),
      ...(length !== undefined ? { length } : {}),
    } satisfies AgentUpload;
  }
  if (req.method === 'GET' && typeof req.headers.range === 'string') return { range: req.headers.range };
  return req.body;
}
