import { agentNode, type AgentNode } from '../support/agent-node';
import { siteViaEdge } from '../support/edge';
import { startTestPlatform, uniqueName, type TestPlatform } from '../support/platform';
import { PREFIX, projectPath, until, waitForOperation } from './support';

/**
 * A customer's node keeps its own memory bound (docs/decisions/0340-sleep-and-wake.md, "Connected
 * nodes"): its agent's plane runs the same sleep keeper as the hosted node with the node's memory
 * (`nodes agent --memory-mb`), so starting a site that would not fit puts the node's least recently
 * used awake site to sleep first, and waking that one puts the next to sleep. Seen from the platform:
 * the sites' metadata (the agent's process report, decision 0385) and the feed's `site.slept` with
 * the reason. The agent class over HTTP with the real executor; the test-only folder runtime stands
 * in for Ghost under its catalog name (its 512 MiB floor), on a node with memory for two.
 */
jest.setTimeout(180_000);

let t: TestPlatform;
let machine: AgentNode;

beforeAll(async () => {
  t = await startTestPlatform({ PUBLISHER_NODE_WAIT_MS: '20000' });
  // As `nodes agent --memory-mb 1024` with the default idle time: only room decides here.
  machine = await agentNode(t, 'connected-capacity', { idleMs: 15 * 60_000, memoryMb: 1024 });
});
afterAll(async () => {
  await machine?.stop();
  await t?.stop();
});

it("puts the node's least recently used site to sleep to start another that would not fit, and the next to wake it", async () => {
  const { key, accountId } = await t.createKey({ plan: 'pro', account: uniqueName('node-capacity') });
  const node = await t.platform.services.publisher.nodes.register(accountId, 'two-sites-of-memory');
  await machine.start(node.token);

  const sites: Array<{ projectId: string; url: string }> = [];
  for (const name of ['First', 'Second', 'Third']) {
    const res = await t.rest('POST', `${PREFIX}/sites`, {
      key,
      body: { name, deployment_mode: 'connected_node', target_node_id: node._id },
    });
    expect([res.status, res.body.error ?? null]).toEqual([202, null]);
    const op = await waitForOperation(t, key, res.body.data.project.id, res.body.data.operation.id, 60_000);
    expect([op.status, op.error_code]).toEqual(['completed', null]);
    sites.push({ projectId: res.body.data.project.id, url: res.body.data.site_url });
    // Distinct moments of last activity, so the least recently used is not a tie.
    await new Promise((r) => setTimeout(r, 50));
  }
  const status = async (i: number) =>
    (await t.rest('GET', projectPath(sites[i].projectId, '/metadata'), { key })).body.data?.process?.status;
  const statuses = () => Promise.all([0, 1, 2].map(status));

  // The third did not fit beside the first two: the first (least recently used) sleeps.
  expect(
    await until('the first site reported asleep', async () => {
      const s = await statuses();
      return s.join() === 'sleeping,running,running' ? s : null;
    }),
  ).toEqual(['sleeping', 'running', 'running']);

  // A request for the first wakes it through the node's edge; the second is now the least recently used.
  const woken = await siteViaEdge(machine.plane.edge.port!, sites[0].url);
  expect(woken.status).toBe(200);
  expect(woken.body).toContain('It works');
  expect(
    await until('the second site reported asleep', async () => {
      const s = await statuses();
      return s.join() === 'running,sleeping,running' ? s : null;
    }),
  ).toEqual(['running', 'sleeping', 'running']);

  const slept = await until('the capacity sleep in the first site’s feed', async () => {
    const r = await t.rest('GET', `/api/v1/projects/${sites[0].projectId}/operation-activity`, { key });
    const items = (r.body?.data?.history?.items ?? []) as Array<{ type: string; title: string }>;
    return items.find((i) => i.type === 'site.slept') ?? null;
  });
  expect(slept.title).toMatch(/room/i);
});
