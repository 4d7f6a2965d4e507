import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { NodeAgent } from '../../dataplane/agent/agent';
import { simulatedNodeExecutor } from '../../dataplane/stand-in/simulated-executor';
import { startTestPlatform, uniqueName, type TestPlatform } from '../support/platform';
import { PREFIX, projectPath, runCli } from './support';
import { freePort, siteViaEdge } from '../support/edge';

/**
 * Connected nodes for real (docs/decisions/0170-node-agent.md): the agent runs as its own process
 * (`platform nodes agent`, the built CLI), reaches the platform only over the bridge with its node
 * token, and serves its sites on its own edge. The agent uses the simulated executor here (a small
 * HTTP server per site behind the real edge); node-agent-ghost.test.ts runs Ghost.
 */

const BIN = path.join(__dirname, '..', '..', 'bin', 'platform.js');
const WAIT_MS = 20_000;
let t: TestPlatform;
let dataDir: string;
const agents: ChildProcess[] = [];

beforeAll(async () => {
  // The contract's limit on failed key authentications per address: agents must never count against it.
  t = await startTestPlatform({ PUBLISHER_NODE_WAIT_MS: String(WAIT_MS), AUTH_FAILURES_PER_MINUTE: '30' });
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'node-agent-'));
});
afterAll(async () => {
  for (const a of agents) if (a.exitCode === null && a.signalCode === null) a.kill('SIGKILL');
  await t?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

/** Runs the built CLI against this test platform's database. */
const cli = (args: string[]) => runCli(t, args);

interface Agent {
  proc: ChildProcess;
  stderr: () => string;
  exit: Promise<number | null>;
}

function startAgent(token: string, edgePort: number, dir: string): Agent {
  const proc = spawn(
    process.execPath,
    [BIN, 'nodes', 'agent', '--api-url', t.bridgeUrl, '--edge-port', String(edgePort), '--data-dir', dir],
    {
      // The token in the environment, never on the command line (docs/decisions/0270).
      env: { ...process.env, PLATFORM_NODE_TOKEN: token, NODE_AGENT_EXECUTOR: 'simulated', NODE_AGENT_STEP_DELAY_MS: '30' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  agents.push(proc);
  let err = '';
  proc.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  proc.stdout!.resume();
  const exit = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return { proc, stderr: () => err, exit };
}

const t0 = Date.now();
const mark = (what: string) => process.stderr.write(`[node-agent.test +${((Date.now() - t0) / 1000).toFixed(1)} s] ${what}\n`);

async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastMark = Date.now();
  for (;;) {
    const v = await fn().catch(() => null);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    if (Date.now() - lastMark > 5_000) mark(`still waiting for ${(lastMark = Date.now()) && what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function operation(key: string, projectId: string, operationId: string): Promise<any> {
  return (await t.rest('GET', projectPath(projectId, `/operations/${operationId}`), { key })).body.data;
}

async function finished(key: string, projectId: string, operationId: string, timeoutMs = 30_000): Promise<any> {
  return until(
    `operation ${operationId}`,
    async () => {
      const op = await operation(key, projectId, operationId);
      return op && (op.status === 'completed' || op.status === 'failed') ? op : null;
    },
    timeoutMs,
  );
}

const nodeStatus = async (key: string, projectId: string) =>
  (await t.rest('GET', projectPath(projectId, '/metadata'), { key })).body.data?.node;

async function register(account: string, name: string, tags: string): Promise<{ id: string; token: string }> {
  const res = await cli(['nodes', 'register', '--account', account, '--name', name, '--tags', tags, '--json']);
  expect(res.code).toBe(0);
  return JSON.parse(res.stdout.trim().split('\n').pop()!);
}

describe('the node agent', () => {
  it('refuses a forged token: the API answers 401 and the agent exits non-zero within 10 s with one sentence', async () => {
    const forged = 'pnode_' + 'A'.repeat(43);
    const res = await fetch(`${t.bridgeUrl}/v1/node-agent/heartbeat`, {
      method: 'POST',
      headers: { 'x-node-token': forged, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(401);
    const started = Date.now();
    const agent = startAgent(forged, await freePort(), path.join(dataDir, 'forged'));
    const code = await agent.exit;
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(code).not.toBe(0);
    const lines = agent.stderr().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^platform: .*token.*\.$/);
  });

  it('runs a site placed by selector tags end to end, serves it on its own edge; kill -9 makes the node unreachable and the site recovers after restart', async () => {
    const { key, account } = await t.createKey({ plan: 'pro', account: uniqueName('nodes') });
    // The token is shown once and stored hashed.
    const node = await register(account, 'shop-floor', 'region:eu,disk:ssd');
    expect(node.token).toMatch(/^pnode_/);
    const stored = await t.platform.conn.collection('publisher_connected_nodes').findOne({ _id: node.id as never });
    expect(JSON.stringify(stored)).not.toContain(node.token);
    // Another account's node with the same tags is never chosen.
    const other = await t.createKey({ account: uniqueName('nodes-other') });
    const foreign = await register(other.account, 'foreign', 'region:eu,disk:ssd');
    const foreignAgent = startAgent(foreign.token, await freePort(), path.join(dataDir, 'foreign'));

    const edgePort = await freePort();
    const dir = path.join(dataDir, 'a');
    let agent = startAgent(node.token, edgePort, dir);
    await until(
      'the node to be reachable',
      async () => (await t.platform.services.publisher.nodes.get(node.id))?.lastHeartbeatAt,
      20_000,
    );
    const list = await cli(['nodes', 'list', '--account', account, '--json']);
    expect(JSON.parse(list.stdout.trim().split('\n').pop()!).nodes).toEqual([
      expect.objectContaining({ id: node.id, name: 'shop-floor', status: 'reachable', edge_port: edgePort }),
    ]);

    mark('node reachable; creating a site');
    const created = await t.rest('POST', `${PREFIX}/sites`, {
      key,
      body: { name: 'Node Site', deployment_mode: 'connected_node', node_selector_tags: ['region:eu'] },
    });
    expect(created.status).toBe(202);
    const projectId = created.body.data.project.id;
    expect(created.body.data.site_url).toMatch(new RegExp(`^http://node-site-[0-9a-f]{6}\\.sites\\.localhost:${edgePort}/$`));
    const provision = await finished(key, projectId, created.body.data.operation.id);
    expect([provision.status, provision.error_code]).toEqual(['completed', null]);
    const meta = (await t.rest('GET', projectPath(projectId, '/metadata'), { key })).body.data;
    expect(meta.installation).toMatchObject({ target_node_id: node.id, placement_mode: 'selector', status: 'running' });
    expect(meta.node).toEqual({ id: node.id, status: 'reachable' });
    const siteUrl = created.body.data.site_url;
    const served = await siteViaEdge(edgePort, siteUrl);
    expect(served.status).toBe(200);
    expect(served.body).toContain('simulated site node-site-');

    mark('provisioned');
    // A lifecycle action runs on the node: stop answers 503 on its edge, start brings it back.
    const stop = await t.rest('POST', projectPath(projectId, '/actions'), { key, body: { action: 'stop' } });
    expect(stop.status).toBe(202);
    expect((await finished(key, projectId, stop.body.data.operation.id)).status).toBe('completed');
    expect((await siteViaEdge(edgePort, siteUrl)).status).toBe(503);
    const start = await t.rest('POST', projectPath(projectId, '/actions'), { key, body: { action: 'start' } });
    expect((await finished(key, projectId, start.body.data.operation.id)).status).toBe('completed');
    expect((await siteViaEdge(edgePort, siteUrl)).status).toBe(200);

    mark('stop/start done');
    // The other account's agent saw none of this account's work.
    foreignAgent.proc.kill('SIGTERM');
    await foreignAgent.exit;
    expect(foreignAgent.stderr()).not.toContain('node-site-');

    // kill -9: within 45 s the site's metadata says the node is unreachable, and actions answer 409.
    const killedAt = Date.now();
    agent.proc.kill('SIGKILL');
    await agent.exit;
    await until('the node to be unreachable', async () => (await nodeStatus(key, projectId))?.status === 'unreachable', 45_000);
    expect(Date.now() - killedAt).toBeLessThan(45_000);
    const refused = await t.rest('POST', projectPath(projectId, '/actions'), { key, body: { action: 'restart' } });
    expect([refused.status, refused.body.error?.code]).toEqual([409, 'node_unreachable']);

    mark('node unreachable; 409 seen');
    // A site placed on the node meanwhile waits for it (waiting_for_node) ...
    const waiting = await t.rest('POST', `${PREFIX}/sites`, {
      key,
      body: { name: 'Waits', deployment_mode: 'connected_node', target_node_id: node.id },
    });
    expect(waiting.status).toBe(202);
    const waitingId = waiting.body.data.project.id;
    await until(
      'the step to wait for the node',
      async () => {
        const op = await operation(key, waitingId, waiting.body.data.operation.id);
        return op?.steps?.some((s: any) => s.status === 'running' && /^waiting_for_node/.test(s.detail ?? ''));
      },
      10_000,
    );

    mark('waiting_for_node seen; restarting the agent');
    // ... and when the agent comes back it reconciles: the first site runs again without any request.
    agent = startAgent(node.token, edgePort, dir);
    await until('the site to answer again', async () => (await siteViaEdge(edgePort, siteUrl)).status === 200, 20_000);
    expect(agent.stderr()).toMatch(/reconcile: site node-site-\S+ started/);
    expect((await nodeStatus(key, projectId))?.status).toBe('reachable');
    const resumed = await finished(key, waitingId, waiting.body.data.operation.id);
    expect([resumed.status, resumed.error_code]).toEqual(['completed', null]);
    expect((await siteViaEdge(edgePort, waiting.body.data.site_url)).status).toBe(200);

    mark('reconciled; waiting op done');
    // A drained node keeps its sites and takes no new ones.
    const drained = await cli(['nodes', 'drain', '--account', account, '--node', node.id, '--json']);
    expect(JSON.parse(drained.stdout.trim().split('\n').pop()!)).toMatchObject({ id: node.id, status: 'draining' });
    const bySelector = await t.rest('POST', `${PREFIX}/sites`, {
      key,
      body: { name: 'Nowhere', deployment_mode: 'connected_node', node_selector_tags: ['region:eu'] },
    });
    expect([bySelector.status, bySelector.body.error?.code]).toEqual([409, 'no_eligible_node']);
    const manual = await t.rest('POST', `${PREFIX}/sites`, {
      key,
      body: { name: 'Nowhere', deployment_mode: 'connected_node', target_node_id: node.id },
    });
    expect([manual.status, manual.body.error?.code]).toEqual([409, 'node_draining']);
    expect((await siteViaEdge(edgePort, siteUrl)).status).toBe(200);
    agent.proc.kill('SIGTERM');
    expect(await agent.exit).toBe(0);
  }, 400_000);

  it('publishes the sleeps and wakes its agent reports with a heartbeat, for the sites placed on its node only', async () => {
    const { key, account } = await t.createKey({ plan: 'pro', account: uniqueName('nodes-power') });
    const node = await register(account, 'sleepy', 'region:ap');
    const other = await register(account, 'elsewhere', 'region:sa');
    // In this process, so the test can speak for its data plane: the simulated executor has no
    // site host that sleeps, so the plane's `power` events are emitted here as the keeper would.
    const agent = new NodeAgent({
      apiUrl: t.bridgeUrl,
      token: node.token,
      dataDir: path.join(dataDir, 'power'),
      edgePort: 0,
      executor: simulatedNodeExecutor(30),
      heartbeatMs: 200,
      claimWaitMs: 1_000,
    });
    await agent.start();
    try {
      const created = await t.rest('POST', `${PREFIX}/sites`, {
        key,
        body: { name: 'Sleepy', deployment_mode: 'connected_node', target_node_id: node.id },
      });
      expect(created.status).toBe(202);
      const projectId = created.body.data.project.id;
      expect((await finished(key, projectId, created.body.data.operation.id)).status).toBe('completed');
      // A site of another node (its agent never connects): what this agent says of it is ignored.
      const foreign = await t.rest('POST', `${PREFIX}/sites`, {
        key,
        body: { name: 'Elsewhere', deployment_mode: 'connected_node', target_node_id: other.id },
      });
      const foreignId = foreign.body.data.project.id;

      const power = agent.plane.sites.power;
      power.emit('slept', { siteId: projectId, at: new Date().toISOString(), reason: 'idle' });
      power.emit('slept', { siteId: foreignId, at: new Date().toISOString(), reason: 'capacity' });
      power.emit('woke', { siteId: projectId, at: new Date(Date.now() + 1).toISOString(), ms: 1_234 });
      const feed = async (id: string): Promise<any[]> =>
        (await t.rest('GET', `/api/v1/projects/${id}/operation-activity`, { key })).body.data?.history?.items ?? [];
      const items = await until(
        'sleep and wake in the feed',
        async () => {
          const found = (await feed(projectId)).filter((i) => /^site\.(slept|woke)$/.test(i.type));
          return found.length === 2 ? found : null;
        },
        // A heartbeat whose publish fails (Kafka busy) sends its events again with the next one.
        90_000,
      );
      expect(items.find((i) => i.type === 'site.slept')).toMatchObject({
        status: 'completed',
        title: 'Site went to sleep (idle)',
      });
      expect(items.find((i) => i.type === 'site.woke')).toMatchObject({ status: 'completed', title: 'Site woke up in 1.2 s' });
      await new Promise((r) => setTimeout(r, 2_000));
      expect((await feed(foreignId)).filter((i) => /^site\./.test(i.type))).toEqual([]);
      // Sent once: later heartbeats add nothing.
      expect((await feed(projectId)).filter((i) => /^site\./.test(i.type))).toHaveLength(2);
    } finally {
      await agent.stop();
    }
  }, 180_000);

  it('fails a step with node_unreachable when the node stays silent past the wait deadline', async () => {
    const { key, account } = await t.createKey({ plan: 'pro', account: uniqueName('nodes-silent') });
    const node = await register(account, 'never-connected', 'region:us');
    const created = await t.rest('POST', `${PREFIX}/sites`, {
      key,
      body: { name: 'Silent', deployment_mode: 'connected_node', target_node_id: node.id },
    });
    expect(created.status).toBe(202);
    const op = await finished(key, created.body.data.project.id, created.body.data.operation.id, WAIT_MS + 20_000);
    expect([op.status, op.error_code]).toEqual(['failed', 'node_unreachable']);
    expect(op.error_message).toMatch(/unreachable for 20 s/);
  }, 60_000);
});
