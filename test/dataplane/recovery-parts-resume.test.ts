import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { AgentAuthError } from '../../dataplane/agent/client';
import { PART_RETRIES, type PartCalls, agentRecoveryParts } from '../../dataplane/agent/recovery-parts';
import type { AgentUpload } from '../../dataplane/agent/wire';

/**
 * docs/decisions/0390-resumable-part-transfers.md, the agent's side: a broken transfer resumes from
 * where it broke, a bounded number of times, logged; a refusal is not retried; spent resumes fail the
 * transfer as before.
 */
const data = 'abcdefghij';
const sha256 = createHash('sha256').update(data).digest('hex');
const part = { sha256, sizeBytes: data.length };
const saved = { ...PART_RETRIES };
let scratch: string;
let log: string[];

/** Bytes of `data` from `from`, breaking (a network error) after `upTo` of them. */
const breaking = (from: number, upTo: number) =>
  Readable.from(
    (async function* () {
      yield Buffer.from(data.slice(from, from + upTo));
      if (from + upTo < data.length) throw Object.assign(new Error('terminated'), { name: 'TypeError' });
    })(),
  );

const calls = (over: Partial<PartCalls>): PartCalls => ({
  bytes: () => Promise.reject(new Error('unused')),
  upload: () => Promise.reject(new Error('unused')),
  get: () => Promise.reject(new Error('unused')),
  log: (l) => log.push(l),
  ...over,
});

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'parts-resume-'));
  Object.assign(PART_RETRIES, { backoffMs: 1, maxBackoffMs: 4 });
});
afterAll(async () => {
  Object.assign(PART_RETRIES, saved);
  await rm(scratch, { recursive: true, force: true });
});
beforeEach(() => {
  log = [];
});

describe("a recovery part's transfer on the agent", () => {
  it('resumes a broken download from the byte it reached', async () => {
    const froms: (number | undefined)[] = [];
    const parts = agentRecoveryParts(
      calls({
        bytes: async (_p, from) => {
          froms.push(from);
          return breaking(from ?? 0, 4);
        },
      }),
      'task-1',
      scratch,
    );
    expect(await text(await parts.read(part))).toBe(data);
    expect(froms).toEqual([undefined, 4, 8]);
    expect(log).toHaveLength(2);
    expect(log[0]).toMatch(/download after 4 bytes broke \(terminated\); resuming in 1 ms \(1 of 5\)/);
  });

  it('asks for nothing more when the break comes after the last byte', async () => {
    const froms: (number | undefined)[] = [];
    const parts = agentRecoveryParts(
      calls({
        bytes: async (_p, from) => {
          froms.push(from);
          // Every byte arrives, then the connection breaks before the answer ends.
          return Readable.from(
            (async function* () {
              yield Buffer.from(data);
              throw Object.assign(new Error('terminated'), { name: 'TypeError' });
            })(),
          );
        },
      }),
      'task-4',
      scratch,
    );
    expect(await text(await parts.read(part))).toBe(data);
    expect(froms).toEqual([undefined]);
    expect(log).toEqual([]);
  });

  it(`gives up after ${PART_RETRIES.attempts} resumes, and never retries a refusal or a refused token`, async () => {
    let asked = 0;
    const never = agentRecoveryParts(
      calls({
        bytes: async () => {
          asked++;
          return breaking(0, 0);
        },
      }),
      'task-2',
      scratch,
    );
    await expect(text(await never.read(part))).rejects.toThrow('terminated');
    expect(asked).toBe(1 + PART_RETRIES.attempts);

    for (const refusal of [
      Object.assign(new Error('no part'), { status: 404, code: 'part_not_found' }),
      new AgentAuthError('refused'),
    ]) {
      let tries = 0;
      const refused = agentRecoveryParts(
        calls({
          bytes: async (_p, from) => {
            tries++;
            if (from) throw refusal;
            return breaking(0, 4);
          },
        }),
        'task-3',
        scratch,
      );
      await expect(text(await refused.read(part))).rejects.toBe(refusal);
      expect(tries).toBe(2);
    }
  });

  it('resumes a broken upload from what the platform holds, and leaves no scratch file', async () => {
    const sent: { offset?: number; length?: number; size: number; bytes: string }[] = [];
    const parts = agentRecoveryParts(
      calls({
        upload: async <T>(_p: string, u: AgentUpload) => {
          sent.push({ offset: u.offset, length: u.length, size: u.size, bytes: await text(u.stream) });
          if (sent.length === 1) throw Object.assign(new Error('fetch failed'), { name: 'TypeError' });
          return { sha256, size_bytes: data.length } as T;
        },
        get: async <T>(p: string) => {
          expect(p).toBe(`/tasks/task-4/parts/${sha256}/upload`);
          return { sha256, offset: 6, length: data.length } as T;
        },
      }),
      'task-4',
      scratch,
    );
    expect(await parts.put(Readable.from([Buffer.from(data)]))).toEqual({ sha256, sizeBytes: data.length });
    expect(sent).toEqual([
      { offset: 0, length: 10, size: 10, bytes: data },
      { offset: 6, length: 10, size: 4, bytes: 'ghij' },
    ]);
    expect(log[0]).toMatch(/the upload of [0-9a-f]{64} from byte 0 broke \(fetch failed\); resuming/);
    expect(await readdir(scratch)).toEqual([]);
  });
});
