import { sleep } from './sleep';

describe('sleep', () => {
  it('waits', async () => {
    const t0 = Date.now();
    await sleep(30);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(25);
  });

  it('rejects with the abort reason as soon as the signal aborts', async () => {
    const c = new AbortController();
    const p = sleep(10_000, c.signal);
    const reason = new Error('lease lost');
    setTimeout(() => c.abort(reason), 10);
    await expect(p).rejects.toBe(reason);
  });

  it('rejects at once on an aborted signal', async () => {
    const c = new AbortController();
    c.abort();
    await expect(sleep(10, c.signal)).rejects.toThrow(/abort/i);
  });
});
