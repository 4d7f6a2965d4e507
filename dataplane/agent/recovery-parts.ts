import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { type Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { BackupError, type RecoveryParts } from '../site-backup';
import type { AgentUpload } from './wire';

/** The agent's calls the part store uses: a download's bytes, an upload's JSON answer. */
export interface PartCalls {
  bytes(path: string): Promise<Readable>;
  upload<T>(path: string, body: AgentUpload): Promise<T>;
}

/**
 * A recovery point's parts over the agent API, for the task `taskId` this node holds
 * (docs/decisions/0375-recovery-parts-over-the-agent-api.md): a restore reads a part the task names
 * (`GET /tasks/:taskId/parts/:sha256`; the caller checks its bytes); a capture's bytes are written to
 * a scratch file under `scratch` while they are hashed and counted (they come from a pipe: tar, a
 * SQL dump), then sent with their SHA-256 in the path and their size as the body's length (`POST`),
 * which the platform checks before it keeps them. Nothing is held in memory beyond a stream's chunks.
 */
export function agentRecoveryParts(calls: PartCalls, taskId: string, scratch: string): RecoveryParts {
  const base = `/tasks/${encodeURIComponent(taskId)}/parts/`;
  return {
    read: (part) => calls.bytes(`${base}${part.sha256}`),
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
        const got = await calls
          .upload<{ sha256: string; size_bytes: number }>(`${base}${sha256}`, { stream: createReadStream(file), size })
          .catch((e: Error & { code?: string }) => {
            throw new BackupError('capture_failed', `the platform did not keep the part (${e.code ?? 'error'}): ${e.message}`);
          });
        return { sha256: got.sha256, sizeBytes: got.size_bytes };
      } finally {
        await rm(file, { force: true });
      }
    },
  };
}
