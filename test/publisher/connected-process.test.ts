import { NODE_AGENT_PATH, NODE_TOKEN_HEADER, type SiteProcessReport } from '../../dataplane/agent/wire';
import { agentNode, type AgentNode } from '../support/agent-node';
import { startTestPlatform, uniqueName, type TestPlatform } from '../support/platform';
import { ISO, PREFIX, projectPath, until, waitForOperation } from './support';

/**
 * docs/decisions/0385-connected-site-process.md: a connected node's agent (the agent class over HTTP,
 * as `platform nodes agent` runs it, with the real executor on its own data plane; the test-only
 * folder runtime stands in for Ghost under the catalog's runtime name) reports its sites' processes
 * with each heartbeat, and a connected site's metadata shows its process as a hosted site's does:
 * running after a start, stopped after a stop. Before, it was always null. What another node reports
 * of a site is never shown; a silent node's sites show `unknown`.
 */
jest.setTimeout(180_000);

let t: TestPlatform;
let machine: AgentNode;

beforeAll(async () => {
  t = await startTestPlatform({ PUBLISHER_NODE_WAIT_MS: '20000' });
  machine = await agentNode(t, 'connected-process');
});
afterAll(async () => {
  await machine?.stop();
  await t?.stop();
});

const metadata = async (key: string, projectId: string) =>
  (await t.rest('GET', projectPath(projectId, '/metadata'), { key })).body.data;

async function connectedSite(key: string, nodeId: string, name: string): Promise<{ projectId: string; operationId: string }> {
  const res = await t.rest('POST', `${PREFIX}/sites`, {
    key,
    body: { name, deployment_mode: 'connected_node', target_node_id: nodeId },
  });
  expect([res.status, res.body.error ?? null]).toEqual([202, null]);
  return { projectId: res.body.data.project.id, operationId: res.body.data.operation.id };
}

async function act(key: string, projectId: string, action: string): Promise<void> {
  const res = await t.rest('POST', projectPath(projectId, '/actions'), { key, body: { action } });
  expect(res.status).toBe(202);
  const op = await waitForOperation(t, key, projectId, res.body.data.operation.id);
  expect([op.status, op.error_code]).toEqual(['completed', null]);
}

/** A heartbeat of a node sent by hand (no agent): its report names whatever sites it likes. */
const heartbeat = (token: string, processes: SiteProcessReport[]) =>
  fetch(`${t.bridgeUrl}${NODE_AGENT_PATH}/heartbeat`, {
    method: 'POST',
    headers: { [NODE_TOKEN_HEADER]: token, 'content-type': 'application/json' },
    body: JSON.stringify({ edge_port: 9, site_processes: processes }),
  });

const crashed = (siteId: string): SiteProcessReport => ({
  site_id: siteId,
  status: 'crashed',
  restarts: 10,
  last_exit: { code: 1, signal: null, at: new Date().toISOString() },
  memory_floor_mb: 1,
  started_at: new Date().toISOString(),
  slept_at: null,
});

describe("a connected site's process", () => {
  it("is the node's report of its process: running after a start, stopped after a stop; another node's word is not taken; unknown once the node is silent", async () => {
    const { key, accountId } = await t.createKey({ plan: 'pro', account: uniqueName('node-process') });
    const nodes = t.platform.services.publisher.nodes;
    const node = await nodes.register(accountId, 'runs-it');
    const other = await nodes.register(accountId, 'speaks-for-it');
    await machine.start(node.token);

    const site = await connectedSite(key, node._id, 'Reported');
    const created = await waitForOperation(t, key, site.projectId, site.operationId, 60_000);
    expect([created.status, created.error_code]).toEqual(['completed', null]);
    const running = await until('the process to be reported running', async () => {
      const p = (await metadata(key, site.projectId))?.process;
      return p?.status === 'running' ? p : null;
    });
    expect(running).toEqual({
      status: 'running',
      restarts: 0,
      last_exit: null,
      memory_floor_mb: expect.any(Number),
      started_at: expect.stringMatching(ISO),
      slept_at: null,
      reported_at: expect.stringMatching(ISO),
    });
    expect(running.memory_floor_mb).toBeGreaterThan(0);
    // The router's graph says the same.
    const gql = await t.gql(
      'query($id: ID!) { siteMetadata(projectId: $id) { process { status restarts reportedAt } } }',
      { id: site.projectId },
      key,
    );
    expect(gql.data?.siteMetadata.process).toMatchObject({
      status: 'running',
      restarts: 0,
      reportedAt: expect.stringMatching(ISO),
    });

    await act(key, site.projectId, 'stop');
    const stopped = await until('the process to be reported stopped', async () => {
      const p = (await metadata(key, site.projectId))?.process;
      return p?.status === 'stopped' ? p : null;
    });
    expect(stopped.last_exit).toMatchObject({ at: expect.stringMatching(ISO) });
    expect(stopped.started_at).toBe(running.started_at);

    await act(key, site.projectId, 'start');
    const again = await until('the process to be reported running again', async () => {
      const p = (await metadata(key, site.projectId))?.process;
      return p?.status === 'running' && p.started_at !== running.started_at ? p : null;
    });
    expect(Date.parse(again.started_at)).toBeGreaterThan(Date.parse(running.started_at));

    // Another node of the same account speaks for the site: the platform takes the heartbeat, and what
    // it says of a site not placed on it is never shown; what it says of its own site is.
    const theirs = await connectedSite(key, other._id, 'Elsewhere');
    const said = await heartbeat(other.token, [crashed(site.projectId), crashed(theirs.projectId)]);
    expect(said.status).toBe(200);
    await until('the other node to show its own site', async () => (await metadata(key, theirs.projectId))?.process);
    for (let i = 0; i < 5; i++) {
      expect((await metadata(key, site.projectId)).process.status).toBe('running');
      await new Promise((r) => setTimeout(r, 200));
    }
    const own = (await metadata(key, theirs.projectId)).process;
    expect(own).toMatchObject({ status: 'crashed', restarts: 10 });

    // A node that stopped reporting (silent past NODE_SILENT_MS): its sites' status is unknown, the rest
    // is what it last said, with when.
    await nodes.model.updateOne({ _id: other._id }, { $set: { lastHeartbeatAt: new Date(Date.now() - 60_000) } });
    expect((await metadata(key, theirs.projectId)).process).toEqual({ ...own, status: 'unknown' });
    expect((await metadata(key, theirs.projectId)).node.status).toBe('unreachable');
    // A heartbeat without processes (an older agent, the simulated executor) leaves none shown.
    expect((await heartbeat(other.token, [])).status).toBe(200);
    expect((await metadata(key, theirs.projectId)).process).toBeNull();
    const bare = await fetch(`${t.bridgeUrl}${NODE_AGENT_PATH}/heartbeat`, {
      method: 'POST',
      headers: { [NODE_TOKEN_HEADER]: other.token, 'content-type': 'application/json' },
      body: JSON.stringify({ edge_port: 9 }),
    });
    expect(bare.status).toBe(200);
    expect((await metadata(key, theirs.projectId)).process).toBeNull();
  });
});
