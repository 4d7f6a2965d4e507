import { DueWorkLoop } from './due-work-loop';

const log = { warn: jest.fn() } as unknown as import('./logger').Logger;
const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('DueWorkLoop', () => {
  it('keeps going when a round throws (the database gone), without an unhandled rejection', async () => {
    const unhandled = jest.fn();
    process.on('unhandledRejection', unhandled);
    let calls = 0;
    let worked = 0;
    const loop = new DueWorkLoop({
      name: 'l',
      log,
      pollMs: 10,
      drain: async () => {
        calls++;
        if (calls <= 2) throw new Error('connection refused');
        if (calls === 3) {
          worked++;
          return true;
        }
        return false;
      },
      nextDueInMs: async () => {
        if (calls === 4) throw new Error('connection refused');
        return null;
      },
    });
    loop.start();
    await tick(150);
    await loop.stop();
    process.off('unhandledRejection', unhandled);
    expect(unhandled).not.toHaveBeenCalled();
    expect(worked).toBe(1);
    expect(calls).toBeGreaterThan(5);
    expect(log.warn).toHaveBeenCalled();
  });

  it('sleeps until the next item is due, and a nudge wakes it at once', async () => {
    let rounds = 0;
    const loop = new DueWorkLoop({
      name: 'l',
      log,
      pollMs: 60_000,
      drain: async () => {
        rounds++;
        return false;
      },
      nextDueInMs: async () => null,
    });
    loop.start();
    await tick(30);
    expect(rounds).toBe(1);
    loop.nudge();
    await tick(30);
    expect(rounds).toBe(2);
    await loop.stop();
    loop.nudge();
    await tick(30);
    expect(rounds).toBe(2);
  });
});
