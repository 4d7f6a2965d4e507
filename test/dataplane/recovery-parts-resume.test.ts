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

/**
 * Bytes of `data` from `from`, breaking (a network error) after `upTo` of them; `atTheEnd`: breaking
 * even when those were the last (the connection cut before the answer ended).
 */
const breaking = (from: number, upTo: number, atTheEnd = false) =>
  Readable.from(
    (async function* () {
      yield Buffer.from(data.slice(from, from + upTo));
      if (atTheEnd || from + upTo < data.length) throw Object.assign(new Error('terminated'), { name: 'TypeError' });
    })(),
  );

const calls = (over: Partial<PartCalls>): PartCalls => ({
  bytes: () => Promise.reject(new Error('unused')),
  upload: () => Promise.reject(new Error('unused')),
  get: () => Promise.reject(new Error('unused')),
  log: (l) => log.push(l),
  ...over,
});

/** The part store of `task` over downloads that answer `answer(from)`; `froms`: the byte each asked from. */
function downloading(task: string, answer: (from: number) => Readable) {
  const froms: (number | undefined)[] = [];
  const bytes = async (_p: string, from?: number) => {
    froms.push(from);
    return answer(from ?? 0);
  };
  return { parts: agentRecoveryParts(calls({ bytes }), task, scratch), froms };
}

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
    const { parts, froms } = downloading('task-1', (from) => breaking(from, 4));
    expect(await text(await parts.read(part))).toBe(data);
    expect(froms).toEqual([undefined, 4, 8]);
    expect(log).toHaveLength(2);
    expect(log[0]).toMatch(/download after 4 bytes broke \(terminated\); resuming in 1 ms \(1 of 5\)/);
  });

  it('asks for nothing more when the break comes after the last byte', async () => {
    // Every byte arrives, then the connection breaks before the answer ends.
    const { parts, froms } = downloading('task-4', (from) => breaking(from, data.length, true));
    expect(await text(await parts.read(part))).toBe(data);
    expect(froms).toEqual([undefined]);
    expect(log).toEqual([]);
  });

  it(`gives up after ${PART_RETRIES.attempts} resumes, and never retries a refusal or a refused token`, async () => {
    const never = downloading('task-2', () => breaking(0, 0));
    await expect(text(await never.parts.read(part))).rejects.toThrow('terminated');
    expect(never.froms).toHaveLength(1 + PART_RETRIES.attempts);

    for (const refusal of [
      Object.assign(new Error('no part'), { status: 404, code: 'part_not_found' }),
      new AgentAuthError('refused'),
    ]) {
      const refused = downloading('task-3', (from) => {
        if (from) throw refusal;
        return breaking(0, 4);
      });
      await expect(text(await refused.parts.read(part))).rejects.toBe(refusal);
      expect(refused.froms).toHaveLength(2);
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
