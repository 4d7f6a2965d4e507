import { randomUUID } from 'node:crypto';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { projectPath, runningSite, settled } from './helpers';

/** Issue 8 points 10 and 11, through the bridge: the site lock needs no clock, and writes are fenced. */
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

  it('the site carries the fence of the attempt that changed it last', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key);
    const site = await t.platform.conn.collection('publisher_sites').findOne({ _id: projectId as never });
    expect(site?.fence).toMatch(new RegExp(`^${site?.activeOperationId}:\\d+$`));
  });
});
