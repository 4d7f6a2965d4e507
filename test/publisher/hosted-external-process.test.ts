import { agentNode, type AgentNode } from '../support/agent-node';
import { siteViaEdge } from '../support/edge';
import { startTestPlatform, uniqueName, type TestPlatform } from '../support/platform';
import { ISO, PREFIX, projectPath, until, waitForOperation } from './support';

/**
 * A hosted site whose node's agent runs outside the platform (`PUBLISHER_HOSTED_AGENT=external`; the
 * agent class over HTTP with the real executor on its own plane, the test-only folder runtime standing
 * in for Ghost): its metadata shows its process as that agent reports it (docs/decisions/0385), and
 * its sleeps and wakes reach the project's activity feed (docs/decisions/0350). Before, the process was
 * always null and the agent's sleeps and wakes were dropped.
 */
jest.setTimeout(180_000);

let t: TestPlatform;
let machine: AgentNode;

beforeAll(async () => {
  t = await startTestPlatform({
    PUBLISHER_EXECUTOR: 'real',
    PUBLISHER_HOSTED_AGENT: 'external',
    PUBLISHER_NODE_MEMORY_MB: '100000',
    PUBLISHER_NODE_WAIT_MS: '20000',
  });
  machine = await agentNode(t, 'hosted-external-process', { idleMs: 1_500, memoryMb: null, sweepMs: 250 });
});
afterAll(async () => {
  await machine?.stop();
  await t?.stop();
});

it("shows a hosted site's process and its sleeps and wakes as the hosted node's outside agent reports them", async () => {
  const token = await t.platform.services.publisher.nodes.hostedToken();
  await machine.start(token!);

  const { key } = await t.createKey({ plan: 'pro', account: uniqueName('hosted-external') });
  const created = await t.rest('POST', `${PREFIX}/sites`, { key, body: { name: 'Outside' } });
  expect([created.status, created.body.error ?? null]).toEqual([202, null]);
  const projectId: string = created.body.data.project.id;
  const op = await waitForOperation(t, key, projectId, created.body.data.operation.id, 60_000);
  expect([op.status, op.error_code]).toEqual(['completed', null]);

  const processOf = async () => (await t.rest('GET', projectPath(projectId, '/metadata'), { key })).body.data?.process;
  const running = await until('the process to be reported running', async () => {
    const p = await processOf();
    return p?.status === 'running' ? p : null;
  });
  expect(running).toMatchObject({
    status: 'running',
    restarts: 0,
    started_at: expect.stringMatching(ISO),
    reported_at: expect.stringMatching(ISO),
  });

  // Idle past the agent's idle time: it sleeps, and the platform hears of it.
  const asleep = await until('the process to be reported sleeping', async () => {
    const p = await processOf();
    return p?.status === 'sleeping' ? p : null;
  });
  expect(asleep.slept_at).toMatch(ISO);

  // A request through the agent's edge wakes it.
  const siteUrl = new URL(created.body.data.site_url);
  expect((await siteViaEdge(machine.plane.edge.port!, siteUrl.href)).status).toBe(200);
  await until('the process to be reported running again', async () => (await processOf())?.status === 'running');

  const feed = await until('the sleep and the wake in the feed', async () => {
    const r = await t.rest('GET', `/api/v1/projects/${projectId}/operation-activity`, { key });
    const items = (r.body?.data?.history?.items ?? []) as Array<{ type: string; status: string }>;
    return items.some((i) => i.type === 'site.slept') && items.some((i) => i.type === 'site.woke') ? items : null;
  });
  expect(feed.find((i) => i.type === 'site.woke')).toMatchObject({ status: 'completed' });
});
