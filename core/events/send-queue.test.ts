import { SendQueue } from './send-queue';

/** A send that waits until released, recording each request's items. */
function gatedSend() {
  const requests: number[][] = [];
  const gates: Array<(e?: Error) => void> = [];
  const send = (items: number[]) =>
    new Promise<void>((resolve, reject) => {
      requests.push(items);
      gates.push((e) => (e ? reject(e) : resolve()));
    });
  const release = async (e?: Error) => {
    while (gates.length === 0) await new Promise((r) => setImmediate(r));
    gates.shift()!(e);
    await new Promise((r) => setImmediate(r));
  };
  return { requests, send, release };
}

describe('SendQueue', () => {
  it('sends the first publish at once and the ones that arrive meanwhile together, in order, one request at a time', async () => {
    const g = gatedSend();
    const q = new SendQueue(g.send);
    const first = q.submit([1]);
    const rest = [q.submit([2]), q.submit([3, 4]), q.submit([5])];
    expect(g.requests).toEqual([[1]]);
    await g.release();
    await first;
    expect(g.requests).toEqual([[1], [2, 3, 4, 5]]);
    await g.release();
    await Promise.all(rest);
    expect(g.requests).toHaveLength(2);
  });

  it('rejects every caller of a failed request and goes on with the next', async () => {
    const g = gatedSend();
    const q = new SendQueue(g.send);
    const outcome = (p: Promise<void>) =>
      p.then(
        () => 'sent',
        (e: Error) => e.message,
      );
    const [a, b, c] = [q.submit([1]), q.submit([2]), q.submit([3])].map(outcome);
    await g.release(new Error('broker gone'));
    await g.release(new Error('still gone'));
    expect(await Promise.all([a, b, c])).toEqual(['broker gone', 'still gone', 'still gone']);
    const d = q.submit([4]);
    await g.release();
    await expect(d).resolves.toBeUndefined();
    expect(g.requests).toEqual([[1], [2, 3], [4]]);
  });

  it('keeps a request within maxItems, a larger single publish going alone', async () => {
    const g = gatedSend();
    const q = new SendQueue(g.send, 3);
    const all = [q.submit([0]), q.submit([1, 2]), q.submit([3]), q.submit([4, 5, 6, 7]), q.submit([8])];
    for (let i = 0; i < 4; i++) await g.release();
    await Promise.all(all);
    expect(g.requests).toEqual([[0], [1, 2, 3], [4, 5, 6, 7], [8]]);
  });
});
