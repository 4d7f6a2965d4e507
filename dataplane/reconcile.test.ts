import { Reconciler } from './reconcile';

/** The data plane's reconcile loop (dataplane/reconcile.ts): unit test of the scheduling alone. */
describe('Reconciler', () => {
  const gate = () => {
    let open!: () => void;
    const p = new Promise<void>((r) => (open = r));
    return { p, open };
  };

  it('runs a pass when it is registered, again on reconcile, never two of one area at once', async () => {
    const r = new Reconciler({ intervalMs: 0 });
    let runs = 0;
    let inFlight = 0;
    let maxInFlight = 0;
    const g = gate();
    r.register('sites', async () => {
      runs++;
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      if (runs === 1) await g.p;
      inFlight--;
    });
    expect(runs).toBe(1);
    // Three kicks during the first pass share one more pass after it.
    const kicks = [r.kick('sites'), r.kick('sites'), r.reconcile()];
    g.open();
    await Promise.all(kicks);
    expect(runs).toBe(2);
    expect(maxInFlight).toBe(1);
    await r.reconcile();
    expect(runs).toBe(3);
    await r.close();
  });

  it('reports a failed pass and keeps the area registered; unregister and close stop further passes', async () => {
    const errors: string[] = [];
    const r = new Reconciler({ intervalMs: 0, onError: (area, e) => errors.push(`${area}: ${e.message}`) });
    let runs = 0;
    const unregister = r.register('releases', async () => {
      runs++;
      throw new Error('boom');
    });
    await r.reconcile();
    expect(errors).toEqual(['releases: boom', 'releases: boom']);
    unregister();
    await r.reconcile();
    expect(runs).toBe(2);
    r.register('sites', async () => void runs++);
    await r.close();
    const before = runs;
    await r.kick('sites');
    expect(runs).toBe(before);
  });

  it('runs the passes periodically', async () => {
    const r = new Reconciler({ intervalMs: 20 });
    let runs = 0;
    r.register('sites', async () => void runs++);
    await new Promise((res) => setTimeout(res, 120));
    await r.close();
    expect(runs).toBeGreaterThanOrEqual(3);
  });
});
