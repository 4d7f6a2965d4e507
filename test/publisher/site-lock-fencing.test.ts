import { randomUUID } from 'node:crypto';
import { OperationEngine } from '../../core/operations/engine';
import { publisherModels } from '../../subgraphs/publisher/model';
import { SiteLocks } from '../../subgraphs/publisher/site-locks';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { projectPath, runningSite, settled, waitForOperation } from './support';

/** Decision 0014 (fencing, deadlines, locks), through the bridge: the site lock needs no clock, and writes are fenced. */
let t: TestPlatform;

beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(async () => {
  await t.stop();
});

describe('site lock without a wall-clock grace', () => {
  it('a lock naming an operation whose request died before enqueueing is freed at once by the next action', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key);
    // A request took the lock and died before its operation existed.
    const ghost = randomUUID();
    await t.platform.conn
      .collection('publisher_sites')
      .updateOne({ _id: projectId as never }, { $set: { activeOperationId: ghost, activeOperationAt: new Date() } });

    // Reads show the site as it was; nothing is written by a read.
    const meta = await t.rest('GET', projectPath(projectId, '/metadata'), { key });
    expect(meta.status).toBe(200);
    expect(await t.platform.conn.collection('operations').findOne({ _id: ghost as never })).toBeNull();

    // The next lifecycle action does not wait 30 s: it voids the ghost and proceeds.
    const restart = await t.rest('POST', projectPath(projectId, '/actions'), { key, body: { action: 'restart' } });
    expect(restart.status).toBe(202);
    const tomb = await t.platform.conn.collection('operations').findOne({ _id: ghost as never });
    expect(tomb).toMatchObject({ status: 'failed', errorCode: 'operation_never_enqueued', resourceType: 'void' });
    await settled(t, key, projectId);
    const meta2 = await t.rest('GET', projectPath(projectId, '/metadata'), { key });
    expect(meta2.body.data.installation.status).toBe('running');
  });

  it('a request whose lock a concurrent one voided before it enqueued answers 409 operation_in_progress, naming the holder', async () => {
    const { key, accountId } = await t.createKey();
    const projectId = await runningSite(t, key);
    const models = publisherModels(t.platform.conn);
    const engine = new OperationEngine({ conn: t.platform.conn });
    const locks = new SiteLocks(models, engine);
    // Request A takes the lock and is slow to enqueue its operation…
    const site = (await models.Site.findById(projectId).lean())!;
    const a = randomUUID();
    const previous = await locks.begin(site, 'restart', a);
    // …so request B, finding a holder with no operation, voids it and takes the site.
    const b = await t.rest('POST', projectPath(projectId, '/recovery-points'), { key, body: {} });
    expect(b.status).toBe(202);
    const holder = b.body.data.operation.id as string;
    // A's enqueue then fails: A lost the race like any other request, and says so.
    const late = locks.withLock(site, a, previous, () =>
      engine.enqueue({ id: a, accountId, projectId, resourceType: 'site', resourceId: projectId, operationType: 'restart' }),
    );
    await expect(late).rejects.toMatchObject({
      code: 'operation_in_progress',
      details: { operation_id: holder, operation_type: 'recovery_point' },
    });
    expect((await models.Site.findById(projectId).lean())?.activeOperationId).toBe(holder);
    await settled(t, key, projectId);
  });

  it('the site carries the fence of the attempt that changed it last', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key);
    const site = await t.platform.conn.collection('publisher_sites').findOne({ _id: projectId as never });
    expect(site?.fence).toMatch(new RegExp(`^${site?.activeOperationId}:\\d+$`));
  });
});

describe('hosted-site slot', () => {
  it('a provisioning that failed for good gives its slot back; retrying takes it again', async () => {
    const { key } = await t.createKey({ plan: 'free' });
    const name = `Doomed ${randomUUID().slice(0, 8)}`;
    t.platform.services.publisher.simulated.injectFailure({
      operationType: 'provision',
      step: 'health_check',
      retriable: false,
      code: 'infrastructure_failure',
      match: (op) => (op.input as { name?: string })?.name === name,
    });
    const doomed = await t.rest('POST', '/api/v1/publisher/sites', { key, body: { name } });
    expect(doomed.status).toBe(202);
    const failed = await waitForOperation(t, key, doomed.body.data.project.id, doomed.body.data.operation.id);
    expect(failed.status).toBe('failed');
    // The free plan's one slot is free again: another site can be created.
    const next = await t.rest('POST', '/api/v1/publisher/sites', { key, body: { name: 'Second' } });
    expect(next.status).toBe(202);
    // Retrying the failed one now finds no slot: 402, and its lock is given back.
    const retry = await t.rest('POST', projectPath(doomed.body.data.project.id, '/actions'), {
      key,
      body: { action: 'retry_provisioning' },
    });
    expect([retry.status, retry.body.error?.code]).toEqual([402, 'plan_limit_reached']);
  });
});
