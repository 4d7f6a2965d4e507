import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { PREFIX, projectPath, until as untilEvery } from './support';
import { freePort, siteViaEdge } from '../support/edge';
import { alive, descendants } from '../support/processes';

/**
 * A connected-node site run for real: the agent as its own process with the real executor (Ghost
 * from the per-user runtime cache, supervised, behind the agent's own edge), reached by the
 * platform only through node tasks over the bridge (docs/decisions/0170-node-agent.md). After a
 * `kill -9` of the agent, the restarted agent stops the Ghost its predecessor left and starts the
 * site again on the same files, without a client request.
 */

const BIN = path.join(__dirname, '..', '..', 'bin', 'platform.js');
let t: TestPlatform;
let dataDir: string;
const procs: ChildProcess[] = [];

beforeAll(async () => {
  t = await startTestPlatform();
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'node-agent-ghost-'));
});
afterAll(async () => {
  // A process ended by a signal keeps exitCode null: it is running only while both are null.
  const running = procs.filter((p) => p.exitCode === null && p.signalCode === null);
  for (const p of running) p.kill('SIGTERM');
  await Promise.all(running.map((p) => new Promise((r) => p.on('exit', r))));
  await t?.stop();
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

function agent(token: string, edgePort: number): { proc: ChildProcess; stderr: () => string } {
  const proc = spawn(
    process.execPath,
    [BIN, 'nodes', 'agent', '--api-url', t.bridgeUrl, '--edge-port', String(edgePort), '--data-dir', dataDir],
    // The token in the environment, never on the command line (docs/decisions/0270).
    { env: { ...process.env, PLATFORM_NODE_TOKEN: token }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  procs.push(proc);
  let err = '';
  proc.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  return { proc, stderr: () => err };
}

const until = <T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs: number) =>
  untilEvery(what, fn, timeoutMs, 500);

it(
  'runs Ghost on the node agent end to end and brings it back after kill -9 and a restart',
  async () => {
    const { key, accountId } = await t.createKey({ plan: 'pro' });
    const node = await t.platform.services.publisher.nodes.register(accountId, 'ghost-node', ['role:blog']);
    const edgePort = await freePort();
    let a = agent(node.token, edgePort);
    await until(
      'the node to connect',
      async () => (await t.platform.services.publisher.nodes.get(node._id))?.lastHeartbeatAt,
      30_000,
    );

    const created = await t.rest('POST', `${PREFIX}/sites`, {
      key,
      body: { name: 'Ghost On Node', deployment_mode: 'connected_node', target_node_id: node._id },
    });
    expect(created.status).toBe(202);
    const projectId = created.body.data.project.id;
    const siteUrl: string = created.body.data.site_url;
    expect(siteUrl).toMatch(new RegExp(`^http://ghost-on-node-[0-9a-f]{6}\\.sites\\.localhost:${edgePort}/$`));
    const op = await until(
      'provisioning',
      async () => {
        const o = (await t.rest('GET', projectPath(projectId, `/operations/${created.body.data.operation.id}`), { key })).body
          .data;
        return o && (o.status === 'completed' || o.status === 'failed') ? o : null;
      },
      10 * 60_000,
    );
    expect([op.status, op.error_code, op.error_message]).toEqual(['completed', null, null]);
    const home = await siteViaEdge(edgePort, siteUrl);
    expect(home.status).toBe(200);
    expect(home.body).toContain('<meta name="generator" content="Ghost');
    // The site's files are on the node, its admin access sealed on the platform.
    await stat(path.join(dataDir, 'sites', projectId));
    expect(await t.platform.services.publisher.real.adminAccess(projectId)).toMatchObject({
      adminApiKey: expect.stringMatching(/^[0-9a-f]{24}:[0-9a-f]{64}$/),
    });

    // The agent's Ghost dies with it (the supervisor's parent watch, decision 0245); a restarted
    // agent would also reap one left behind.
    const ghosts = descendants(a.proc.pid!);
    expect(ghosts.length).toBeGreaterThan(0);
    a.proc.kill('SIGKILL');
    await new Promise((r) => a.proc.on('exit', r));
    await until("the killed agent's Ghost to stop", async () => ghosts.every((pid) => !alive(pid)), 15_000);
    a = agent(node.token, edgePort);
    await until('Ghost to answer again', async () => (await siteViaEdge(edgePort, siteUrl)).status === 200, 5 * 60_000);
    expect(a.stderr()).toMatch(/reconcile: site ghost-on-node-\S+ started/);
  },
  20 * 60_000,
);
