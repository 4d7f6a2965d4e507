import { randomUUID } from 'node:crypto';
import type { Principal } from '../../core/principal';
import { HostedSlots } from '../../subgraphs/publisher/hosted-slots';
import { publisherModels } from '../../subgraphs/publisher/model';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { errorBody, PREFIX, projectPath, runningSite, waitForOperation } from './support';

/**
 * Hosted sites are bounded by the node's memory (docs/decisions/0158-site-resources.md): each holds
 * its runtime's memory floor (512 MiB for the 5.x releases); a create that does not fit answers 409
 * `node_capacity_exhausted`, and a deleted site gives its room back. Records only: the simulated
 * executor, with PUBLISHER_NODE_MEMORY_MB=1100 (room for two 512 MiB sites).
 */
describe('node memory bounds the hosted sites', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startTestPlatform({ PUBLISHER_NODE_MEMORY_MB: '1100', SIMULATED_STEP_DELAY_MS: '0' });
  });
  afterAll(() => t?.stop());

  it('answers 409 node_capacity_exhausted when the floors would not fit, and takes the site once one is deleted', async () => {
    const a = await t.createKey({ plan: 'pro' });
    const b = await t.createKey({ plan: 'pro' });
    const first = await runningSite(t, a.key, { name: 'One' });
    await runningSite(t, b.key, { name: 'Two' });

    const full = await t.rest('POST', `${PREFIX}/sites`, { key: a.key, body: { name: 'Three' } });
    expect(full.status).toBe(409);
    expect(full.body).toEqual(errorBody('node_capacity_exhausted'));
    expect(full.body.error.details).toEqual({ node_memory_mb: 1100, reserved_mb: 1024, required_mb: 512 });
    // Nothing was created by the refused request.
    const list = await t.rest('GET', `${PREFIX}/sites`, { key: a.key });
    expect(JSON.stringify(list.body)).not.toContain('Three');

    const del = await t.rest('POST', projectPath(first, '/actions'), { key: a.key, body: { action: 'delete' } });
    expect(del.status).toBe(202);
    expect((await waitForOperation(t, a.key, first, del.body.data.operation.id)).status).toBe('completed');
    const again = await t.rest('POST', `${PREFIX}/sites`, { key: a.key, body: { name: 'Three' } });
    expect(again.status).toBe(202);
  });

  it('counts only the sites that never sleep while sites sleep (docs/decisions/0340-sleep-and-wake.md)', async () => {
    const models = publisherModels(t.platform.conn);
    const accountId = randomUUID();
    const p = { accountId, plan: 'pro' } as Principal;
    // Two hosted sites that may sleep already hold the node's 1,100 MiB between them.
    for (const name of ['Sleeper A', 'Sleeper B']) {
      const id = randomUUID();
      await models.Site.collection.insertOne({
        _id: id as never,
        accountId,
        name,
        slug: `${name.toLowerCase().replace(' ', '-')}-${id.slice(0, 6)}`,
        runtimeVersion: '5.130.5',
        deploymentMode: 'hosted',
        status: 'running',
        sleepsWhenIdle: true,
      });
      await new HostedSlots(models, null).reserve(p, id);
    }
    // Awake, both would leave no room; asleep they give it back, so only sites that never sleep count.
    await expect(new HostedSlots(models, 1100, 0).reserve(p, randomUUID(), '5.130.5')).rejects.toMatchObject({
      code: 'node_capacity_exhausted',
    });
    await expect(new HostedSlots(models, 1100, 900_000).reserve(p, randomUUID(), '5.130.5')).resolves.toBeUndefined();
  });
});
