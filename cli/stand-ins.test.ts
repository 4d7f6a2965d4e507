import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { findStandIns, processStart, recordStandIns, runningInstances, stillRuns } from './stand-ins';

/**
 * A record left by a killed instance names a process id the system may give to a later process (or
 * thread): that one is not the platform, so the record counts as gone.
 */
describe('stand-ins records: a reused process id is not the instance', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'stand-ins-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('knows when this process started, and a record with another start is not running', () => {
    const start = processStart(process.pid);
    expect(start).toEqual(expect.any(Number));
    expect(stillRuns({ pid: process.pid, pidStart: start })).toBe(true);
    expect(stillRuns({ pid: process.pid, pidStart: start! + 1 })).toBe(false);
    // A record from before the start was kept (no pidStart) is judged by the id alone, as before.
    expect(stillRuns({ pid: process.pid })).toBe(true);
  });

  it('skips a record whose id now belongs to a process that started later', async () => {
    const later = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
    try {
      await new Promise((r) => later.once('spawn', r));
      const { remove } = await recordStandIns(dir, { bridgeUrl: 'http://127.0.0.1:41001', standIns: {} });
      // Left by an instance killed long ago whose id the system gave to `later`.
      await writeFile(
        path.join(dir, '41002.json'),
        JSON.stringify({
          instance: '41002',
          pid: later.pid,
          pidStart: processStart(later.pid!)! - 1,
          bridgeUrl: 'http://127.0.0.1:41002',
          routerUrl: null,
          startedAt: '',
          standIns: {},
        }),
      );
      expect((await runningInstances(dir)).map((r) => r.instance)).toEqual(['41001']);
      const found = await findStandIns(dir, { bridgePort: 8080 });
      expect(found).toMatchObject({ record: { instance: '41001', pid: process.pid }, note: null });
      await remove();
    } finally {
      later.kill();
    }
  });
});
