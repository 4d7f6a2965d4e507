import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { HOSTED_NODE_ID } from '../../nodes/registry';
import { freePort, siteViaEdge } from '../support/edge';
import { startTestPlatform, uniqueName, type TestPlatform } from '../support/platform';
import { PREFIX, projectPath, until as untilEvery } from './support';

/**
 * The hosted pool as a node (docs/decisions/0225-hosted-pool-node.md, 0226-hosted-node-lease.md):
 * with the real executor a hosted site's machine steps are node tasks of the platform's hosted
 * node, run by the node agent's code. Here the hosted node's agents are two `platform nodes agent`
 * processes (PUBLISHER_HOSTED_AGENT=external, the simulated node executor behind real edges): one
 * holds the node's lease, the other stands by; `kill -9` of the holder hands the node to the other
 * within the lease, its reconcile brings the site back on its edge, and no task runs twice.
 * (The in-process agent with Ghost: test/publisher/real-site.test.ts.)
 */

const BIN = path.join(__dirname, '..', '..', 'bin', 'platform.js');
let t: TestPlatform;
let dataDir: string;
const agents: ChildProcess[] = [];

beforeAll(async () => {
  t = await startTestPlatform({
    PUBLISHER_EXECUTOR: 'real',
    PUBLISHER_HOSTED_AGENT: 'external',
    PUBLISHER_NODE_MEMORY_MB: '100000',
    PUBLISHER_NODE_WAIT_MS: '60000',
  });
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'hosted-node-'));
});
afterAll(async () => {
  for (const a of agents) if (a.exitCode === null && a.signalCode === null) a.kill('SIGKILL');
  await t?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

interface Agent {
  proc: ChildProcess;
  stderr: () => string;
  exit: Promise<number | null>;
  edgePort: number;
}

async function startAgent(name: string): Promise<Agent> {
  const edgePort = await freePort();
  // The hosted node's token is random and sealed on its record (docs/decisions/0270); an operator gets one with `nodes rotate-token`.
  const token = await t.platform.services.publisher.nodes.hostedToken();
  const proc = spawn(
    process.execPath,
    [BIN, 'nodes', 'agent', '--api-url', t.bridgeUrl, '--edge-port', String(edgePort), '--data-dir', path.join(dataDir, name)],
    {
      env: { ...process.env, PLATFORM_NODE_TOKEN: token!, NODE_AGENT_EXECUTOR: 'simulated', NODE_AGENT_STEP_DELAY_MS: '30' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  agents.push(proc);
  let err = '';
  proc.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  proc.stdout!.resume();
  const exit = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return { proc, stderr: () => err, exit, edgePort };
}

const until = <T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs: number) =>
  untilEvery(what, fn, timeoutMs, 100);

async function finished(key: string, projectId: string, operationId: string): Promise<any> {
  return until(
    `operation ${operationId}`,
    async () => {
      const op = (await t.rest('GET', projectPath(projectId, `/operations/${operationId}`), { key })).body.data;
      return op && (op.status === 'completed' || op.status === 'failed') ? op : null;
    },
    60_000,
  );
}

const tasks = () => t.platform.conn.collection('publisher_node_tasks').find({}).toArray();
const hostedNode = () => t.platform.services.publisher.nodes.get(HOSTED_NODE_ID);

describe('the hosted pool as a node', () => {
  it('is no customer node: absent from nodes list, not targetable by target_node_id', async () => {
    const { key, account } = await t.createKey({ plan: 'pro', account: uniqueName('hosted-node') });
    expect(await hostedNode()).toMatchObject({ hosted: true });
    expect(await t.platform.services.publisher.nodes.list(account)).toEqual([]);
    const targeted = await t.rest('POST', `${PREFIX}/sites`, {
      key,
      body: { name: 'Sneaky', deployment_mode: 'connected_node', target_node_id: HOSTED_NODE_ID },
    });
    // Its id is no node id a customer can name (400), nor of their account (422): refused either way.
    expect([400, 422]).toContain(targeted.status);
    expect(await t.platform.services.publisher.sites.models.Site.countDocuments({ targetNodeId: HOSTED_NODE_ID })).toBe(0);
  });

  it("runs a hosted site's steps as tasks of the hosted node; kill -9 of the lease holder hands the node to the standby, which serves the site again; no task runs twice", async () => {
    const { key } = await t.createKey({ plan: 'pro', account: uniqueName('hosted-pool') });
    const a = await startAgent('a');
    await until('agent a to hold the hosted node', async () => (await hostedNode())?.leaseHolder, 20_000);
    const b = await startAgent('b');
    await until('agent b to stand by', async () => b.stderr().includes('standing by'), 20_000);

    const t0 = Date.now();
    const created = await t.rest('POST', `${PREFIX}/sites`, { key, body: { name: 'Pooled' } });
    expect(created.status).toBe(202);
    const projectId = created.body.data.project.id;
    const siteUrl: string = created.body.data.site_url;
    const provision = await finished(key, projectId, created.body.data.operation.id);
    const provisionMs = Date.now() - t0;
    expect([provision.status, provision.error_code]).toEqual(['completed', null]);
    // The machine steps were node tasks of the hosted node, each claimed once, all by the holder.
    const opTasks = (await tasks()).filter((x) => x.operationId === created.body.data.operation.id);
    expect(opTasks.map((x) => x.step).sort()).toEqual(['configure_site', 'health_check', 'pull_image', 'start_runtime']);
    expect(new Set(opTasks.map((x) => x.nodeId))).toEqual(new Set([HOSTED_NODE_ID]));
    expect(opTasks.every((x) => x.claims === 1 && x.status === 'succeeded')).toBe(true);
    expect(new Set(opTasks.map((x) => x.claimedBy)).size).toBe(1);
    expect((await siteViaEdge(a.edgePort, siteUrl)).status).toBe(200);
    expect((await siteViaEdge(b.edgePort, siteUrl)).status).toBe(404);
    // The sealed admin access came from the node's configure_site, as for a connected node.
    expect(await t.platform.services.publisher.real.adminAccess(projectId)).toMatchObject({
      adminApiKey: expect.stringMatching(/^simulated:/),
    });

    const killedAt = Date.now();
    a.proc.kill('SIGKILL');
    await a.exit;
    await until('the standby to serve the site', async () => (await siteViaEdge(b.edgePort, siteUrl)).status === 200, 30_000);
    const takeoverMs = Date.now() - killedAt;
    expect(b.stderr()).toContain('took the node over');

    // The new holder runs the site's next operation.
    const stop = await t.rest('POST', projectPath(projectId, '/actions'), { key, body: { action: 'stop' } });
    expect(stop.status).toBe(202);
    expect((await finished(key, projectId, stop.body.data.operation.id)).status).toBe('completed');
    expect((await siteViaEdge(b.edgePort, siteUrl)).status).toBe(503);
    const all = await tasks();
    expect(all.filter((x) => x.claims !== 1)).toEqual([]);
    console.log(`hosted node figures: ${JSON.stringify({ provisionMs, takeoverMs })}`);
    // The lease says so: kill -9 to serving again within the lease (10 s) and a heartbeat (2 s) and the start.
    expect(takeoverMs).toBeLessThan(20_000);
  });
});
