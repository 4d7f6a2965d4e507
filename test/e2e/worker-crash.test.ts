import { startTestPlatform, type TestPlatform } from '../support/platform';
import { PROVISION_STEPS, waitForOperation } from '../publisher/support';

/**
 * A platform process dies mid-provisioning (its engine stops heartbeating and claiming without
 * releasing its lease); a second process on the same database and topics takes over once the
 * lease expires and completes the operation exactly once, without re-running finished steps.
 */
describe('a worker killed mid-operation', () => {
  let a: TestPlatform;
  let b: TestPlatform | undefined;

  beforeAll(async () => {
    a = await startTestPlatform({ SIMULATED_STEP_DELAY_MS: '250' }, { leaseMs: 1500 });
  });
  afterAll(async () => {
    await b?.stop();
    await a.stop();
  });

  it('is resumed by another worker and completes exactly once', async () => {
    const { key } = await a.createKey();
    const created = await a.rest('POST', '/api/v1/publisher/sites', { key, body: { name: 'Crashy' } });
    const { project, operation } = created.body.data;

    // Let it get two steps in, then "kill" the worker.
    const until = Date.now() + 10_000;
    for (;;) {
      const op = (await a.platform.engine.get(operation.id))!;
      if (op.steps.filter((s) => s.status === 'completed').length >= 2) break;
      if (Date.now() > until) throw new Error('operation did not start');
      await new Promise((r) => setTimeout(r, 20));
    }
    // A dead process does nothing more: no heartbeats, no claims, no further infrastructure work.
    a.platform.services.publisher.simulated.stepDelayMs = 3_600_000;
    a.platform.engine.halt();
    const atCrash = (await a.platform.engine.get(operation.id))!;
    expect(atCrash.status).toBe('running');
    const doneBefore = atCrash.steps.filter((s) => s.status === 'completed').map((s) => s.id);

    b = await startTestPlatform({ SIMULATED_STEP_DELAY_MS: '40' }, { shareWith: a, leaseMs: 1500 });
    const finished = await waitForOperation(b, key, project.id, operation.id);
    expect(finished.status).toBe('completed');
    expect(finished.steps.map((s: any) => s.id)).toEqual(PROVISION_STEPS);
    // Steps finished before the crash were not run again.
    for (const id of doneBefore) expect(finished.steps.find((s: any) => s.id === id).attempts).toBe(1);
    expect(finished.attempt).toBe(2);
    expect(b.platform.engine.stats.completed).toBe(1);
    expect(a.platform.engine.stats.completed).toBe(0);

    const meta = await b.rest('GET', `/api/v1/publisher/projects/${project.id}/metadata`, { key });
    expect(meta.body.data.installation.status).toBe('running');
  });
});
