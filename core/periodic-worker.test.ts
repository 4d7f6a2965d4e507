import { periodicWorker } from './periodic-worker';

const log = { warn: jest.fn() } as unknown as import('./logger').Logger;

describe('periodicWorker', () => {
  it('never overlaps passes, survives a failing pass, and stop waits for the pass in progress', async () => {
    let active = 0;
    let maxActive = 0;
    let passes = 0;
    const w = periodicWorker('t', 5, log, async () => {
      active++;
      maxActive = Math.max(maxActive, active);
      passes++;
      await new Promise((r) => setTimeout(r, 30));
      active--;
      if (passes === 1) throw new Error('boom');
    });
    await w.start();
    await new Promise((r) => setTimeout(r, 200));
    await w.stop();
    expect(active).toBe(0);
    expect(maxActive).toBe(1);
    expect(passes).toBeGreaterThan(2);
    expect(log.warn).toHaveBeenCalledWith(expect.objectContaining({ worker: 't', err: 'boom' }), expect.any(String));
    const after = passes;
    await new Promise((r) => setTimeout(r, 50));
    expect(passes).toBe(after);
  });
});
