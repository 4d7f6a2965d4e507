import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { NodeAgent } from '../../dataplane/agent/agent';
import { DataPlane } from '../../dataplane/plane';
import { RuntimeDrivers } from '../../dataplane/runtimes/driver';
import { siteViaEdge } from '../support/edge';
import { startTestPlatform, uniqueName, type TestPlatform } from '../support/platform';
import { staticDriver } from '../support/static-driver';
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
let root: string;
let plane: DataPlane;
let agent: NodeAgent | null = null;

beforeAll(async () => {
  t = await startTestPlatform({ PUBLISHER_NODE_WAIT_MS: '20000' });
  root = await mkdtemp(path.join(os.tmpdir(), 'connected-capacity-'));
  plane = new DataPlane({
    edgePort: 0,
    host: '127.0.0.1',
    sitesRoot: path.join(root, 'sites'),
    cacheRoot: path.join(root, 'cache'),
    drivers: new RuntimeDrivers([{ ...staticDriver(path.join(root, 'runtimes')), name: 'ghost' }]),
    // As `nodes agent --memory-mb 1024` with the default idle time: only room decides here.
    sleep: { idleMs: 15 * 60_000, memoryMb: 1024 },
  });
  await plane.start();
});
afterAll(async () => {
  await agent?.stop();
  await plane?.stop();
  await t?.stop();
  await rm(root, { recursive: true, force: true });
});

it("puts the node's least recently used site to sleep to start another that would not fit, and the next to wake it", async () => {
  const { key, accountId } = await t.createKey({ plan: 'pro', account: uniqueName('node-capacity') });
  const node = await t.platform.services.publisher.nodes.register(accountId, 'two-sites-of-memory');
  agent = new NodeAgent({
    apiUrl: t.bridgeUrl,
    token: node.token,
    dataDir: root,
    edgePort: 0,
    plane,
    executor: 'real',
    heartbeatMs: 200,
    claimWaitMs: 1_000,
  });
  await agent.start();

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
  const woken = await siteViaEdge(plane.edge.port!, sites[0].url);
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
