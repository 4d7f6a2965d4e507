import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { BackupError, type RecoveryParts } from '../site-backup';
import { sleep } from '../../core/sleep';
import { AgentAuthError } from './client';
import type { AgentUpload, HeldUpload } from './wire';

/** The agent's calls the part store uses: a download's bytes (from a byte on), an upload, a JSON read. */
export interface PartCalls {
  bytes(path: string, from?: number): Promise<Readable>;
  upload<T>(path: string, body: AgentUpload): Promise<T>;
  get<T>(path: string): Promise<T>;
  log?(line: string): void;
}

/**
 * How often a broken transfer is resumed before the step fails as a refused one does, and the pause
 * before each resume (doubled each time, at most `maxBackoffMs`): decision 0390.
 */
export const PART_RETRIES = { attempts: 5, backoffMs: 500, maxBackoffMs: 8_000 };

/**
 * A broken transfer (the connection cut, a timeout) is resumed; a refusal of the platform (an HTTP
 * status), a refused token or the agent stopping is not. An upload at an offset the platform does not
 * hold (409) is resumed from what it holds.
 */
function resumable(e: unknown): boolean {
  if (e instanceof AgentAuthError) return false;
  const status = (e as { status?: unknown }).status;
  if (typeof status === 'number') return status === 409;
  return (e as Error).name !== 'AbortError';
}

/**
 * Waits before resume number `tries` (1, 2, …) after `e`, logged; throws `e` when it is not a broken
 * transfer or the resumes are spent.
 */
async function pauseOrThrow(e: unknown, tries: number, what: string, log?: (line: string) => void): Promise<void> {
  if (!resumable(e) || tries > PART_RETRIES.attempts) throw e;
  const wait = Math.min(PART_RETRIES.backoffMs * 2 ** (tries - 1), PART_RETRIES.maxBackoffMs);
  log?.(`${what} broke (${(e as Error).message}); resuming in ${wait} ms (${tries} of ${PART_RETRIES.attempts})`);
  await sleep(wait);
}

/**
 * A part's bytes that resume where a broken download stopped (`Range: bytes=<n>-`, decision 0390): the
 * first answer's refusal rejects as before; a break later asks for the rest, a bounded number of times.
 * A break after the part's last byte (`size` of them arrived) asks for nothing more: a range from the
 * end is one the platform rightly refuses (416); the caller checks the bytes as always.
 */
async function resumedDownload(calls: PartCalls, p: string, what: string, size: number): Promise<Readable> {
  const first = await calls.bytes(p);
  async function* bytes() {
    let at = 0;
    let tries = 0;
    let source: Readable | null = first;
    for (;;) {
      try {
        source ??= await calls.bytes(p, at);
        for await (const chunk of source as AsyncIterable<Buffer>) {
          at += chunk.length;
          yield chunk;
        }
        return;
      } catch (e) {
        source?.destroy();
        source = null;
        if (at === size) return;
        await pauseOrThrow(e, ++tries, `${what}'s download after ${at} bytes`, calls.log);
      }
    }
  }
  return Readable.from(bytes(), { objectMode: false });
}

/**
 * Sends the scratch file `file` (`size` bytes) as the part; a broken upload asks the platform what it
 * holds and sends the rest from there (`Upload-Offset`), a bounded number of times (decision 0390).
 */
async function resumedUpload<T>(calls: PartCalls, p: string, file: string, size: number): Promise<T> {
  let offset: number | null = 0;
  let tries = 0;
  for (;;) {
    let stream: Readable | null = null;
    try {
      if (offset === null) {
        const held = await calls.get<HeldUpload>(`${p}/upload`);
        offset = held.length === size && held.offset >= 0 && held.offset <= size ? held.offset : 0;
      }
      stream = createReadStream(file, { start: offset });
      return await calls.upload<T>(p, { stream, size: size - offset, offset, length: size });
    } catch (e) {
      await pauseOrThrow(e, ++tries, `the upload of ${path.basename(p)} from byte ${offset ?? 0}`, calls.log);
      offset = null;
    } finally {
      stream?.destroy();
    }
  }
}

/**
 * A recovery point's parts over the agent API, for the task `taskId` this node holds
 * (docs/decisions/0375-recovery-parts-over-the-agent-api.md): a restore reads a part the task names
 * (`GET /tasks/:taskId/parts/:sha256`; the caller checks its bytes); a capture's bytes are written to
 * a scratch file under `scratch` while they are hashed and counted (they come from a pipe: tar, a
 * SQL dump), then sent with their SHA-256 in the path and their size as the body's length (`POST`),
 * which the platform checks before it keeps them. Nothing is held in memory beyond a stream's chunks.
 * A broken transfer resumes, both ways (decision 0390).
 */
export function agentRecoveryParts(calls: PartCalls, taskId: string, scratch: string): RecoveryParts {
  const base = `/tasks/${encodeURIComponent(taskId)}/parts/`;
  return {
    read: (part) => resumedDownload(calls, `${base}${part.sha256}`, `part ${part.sha256}`, part.sizeBytes),
    async put(source) {
      await mkdir(scratch, { recursive: true });
      const file = path.join(scratch, `${randomBytes(8).toString('hex')}.part`);
      try {
        const hash = createHash('sha256');
        let size = 0;
        const count = new Transform({
          transform(c: Buffer, _e, done) {
            hash.update(c);
            size += c.length;
            done(null, c);
          },
        });
        await pipeline(source, count, createWriteStream(file, { flags: 'wx' }));
        const sha256 = hash.digest('hex');
        const got = await resumedUpload<{ sha256: string; size_bytes: number }>(calls, `${base}${sha256}`, file, size).catch(
          (e: Error & { code?: string }) => {
            throw new BackupError('capture_failed', `the platform did not keep the part (${e.code ?? 'error'}): ${e.message}`);
          },
        );
        return { sha256: got.sha256, sizeBytes: got.size_bytes };
      } finally {
        await rm(file, { force: true });
      }
    },
  };
}
