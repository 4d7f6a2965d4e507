import { type ChildProcess, spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { HOSTED_NODE_ID } from '../../nodes/registry';
import { freePort } from '../support/edge';
import { startTestPlatform, uniqueName, type TestPlatform } from '../support/platform';
import { PREFIX, projectPath, runCli, until, waitForOperation } from './support';

/**
 * Node tokens can be rotated and revoked (docs/decisions/0270-node-tokens-and-task-secrets.md,
 * docs/contracts.md "Tenant isolation"): `nodes rotate-token` prints a new token once and the old
 * one is refused at once; `nodes remove` ends a node and its token, refused while sites are placed
 * on it; the agent takes its token from PLATFORM_NODE_TOKEN or `--token-file` and warns about
 * `--token`; the hosted node's token is random and stored hashed (and sealed), not derived from the
 * platform's key. The platform runs the real executor so that its own hosted agent runs in-process;
 * the customer's agents run the simulated node executor.
 */

const BIN = path.join(__dirname, '..', '..', 'bin', 'platform.js');
let t: TestPlatform;
let dataDir: string;
const agents: ChildProcess[] = [];

beforeAll(async () => {
  t = await startTestPlatform({
    PUBLISHER_EXECUTOR: 'real',
    PUBLISHER_NODE_MEMORY_MB: '100000',
    PUBLISHER_NODE_WAIT_MS: '60000',
  });
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'node-tokens-'));
});
afterAll(async () => {
  for (const a of agents) if (a.exitCode === null && a.signalCode === null) a.kill('SIGKILL');
  await t?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

/** Runs the built CLI against this test platform's database. */
const cli = (args: string[]) => runCli(t, args);
const lastJson = (out: string) => JSON.parse(out.trim().split('\n').pop()!);

/** One heartbeat over the bridge with this token: the status the node-agent API answers. */
async function heartbeat(token: string): Promise<number> {
  const res = await fetch(`${t.bridgeUrl}/v1/node-agent/heartbeat`, {
    method: 'POST',
    headers: { 'x-node-token': token, 'content-type': 'application/json' },
    body: '{}',
  });
  await res.arrayBuffer();
  return res.status;
}

interface Agent {
  proc: ChildProcess;
  stderr: () => string;
  exit: Promise<number | null>;
}

function startAgent(args: string[], env: Record<string, string> = {}): Agent {
  const proc = spawn(process.execPath, [BIN, 'nodes', 'agent', '--api-url', t.bridgeUrl, ...args], {
    env: { ...process.env, NODE_AGENT_EXECUTOR: 'simulated', NODE_AGENT_STEP_DELAY_MS: '30', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  agents.push(proc);
  let err = '';
  proc.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  proc.stdout!.resume();
  const exit = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return { proc, stderr: () => err, exit };
}

async function register(account: string, name: string): Promise<{ id: string; token: string }> {
  const res = await cli(['nodes', 'register', '--account', account, '--name', name, '--json']);
  expect(res.code).toBe(0);
  return lastJson(res.stdout);
}

describe('node tokens', () => {
  it('rotate-token prints a new token once and the old one is refused at once; remove ends the node and its token', async () => {
    const { account } = await t.createKey({ plan: 'pro', account: uniqueName('tokens') });
    const node = await register(account, 'rotating');
    expect(await heartbeat(node.token)).toBe(200);

    const rotated = await cli(['nodes', 'rotate-token', '--node', node.id, '--json']);
    expect(rotated.code).toBe(0);
    const out = lastJson(rotated.stdout);
    expect(out).toEqual({ id: node.id, name: 'rotating', token: expect.stringMatching(/^pnode_[A-Za-z0-9_-]{43}$/) });
    expect(out.token).not.toBe(node.token);
    expect(await heartbeat(node.token)).toBe(401);
    expect(await heartbeat(out.token)).toBe(200);
    // Stored as its hash only.
    const stored = await t.platform.conn.collection('publisher_connected_nodes').findOne({ _id: node.id as never });
    expect(JSON.stringify(stored)).not.toContain(out.token);

    const removed = await cli(['nodes', 'remove', '--node', node.id, '--json']);
    expect(removed.code).toBe(0);
    expect(lastJson(removed.stdout)).toEqual({ id: node.id, removed: true });
    expect(await heartbeat(out.token)).toBe(401);
    expect(await t.platform.services.publisher.nodes.get(node.id)).toBeNull();

    const unknown = await cli(['nodes', 'rotate-token', '--node', node.id, '--json']);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('the agent reads its token from PLATFORM_NODE_TOKEN or --token-file; --token works with a warning; a rotated token stops a running agent', async () => {
    const { account } = await t.createKey({ plan: 'pro', account: uniqueName('agent-token') });
    const node = await register(account, 'sources');

    // --token: works, and says on stderr that it shows in the process list.
    const flagged = startAgent([
      '--token',
      node.token,
      '--edge-port',
      String(await freePort()),
      '--data-dir',
      path.join(dataDir, 'flag'),
    ]);
    await until('the agent with --token to connect', async () => flagged.stderr().includes('Ctrl-C stops'), 20_000);
    expect(flagged.stderr()).toMatch(
      /warning: --token shows the node token in the process list.*PLATFORM_NODE_TOKEN.*--token-file/,
    );
    flagged.proc.kill('SIGTERM');
    expect(await flagged.exit).toBe(0);

    // --token-file: no warning, and the token is nowhere on the command line.
    const file = path.join(dataDir, 'token');
    await writeFile(file, `${node.token}\n`, { mode: 0o600 });
    const filed = startAgent([
      '--token-file',
      file,
      '--edge-port',
      String(await freePort()),
      '--data-dir',
      path.join(dataDir, 'file'),
    ]);
    await until('the agent with --token-file to connect', async () => filed.stderr().includes('Ctrl-C stops'), 20_000);
    expect(filed.stderr()).not.toContain('warning');
    filed.proc.kill('SIGTERM');
    expect(await filed.exit).toBe(0);

    // PLATFORM_NODE_TOKEN: no warning; rotating the token refuses the running agent at its next call.
    const env = startAgent(['--edge-port', String(await freePort()), '--data-dir', path.join(dataDir, 'env')], {
      PLATFORM_NODE_TOKEN: node.token,
    });
    await until('the agent with PLATFORM_NODE_TOKEN to connect', async () => env.stderr().includes('Ctrl-C stops'), 20_000);
    expect(env.stderr()).not.toContain('warning');
    const rotated = lastJson((await cli(['nodes', 'rotate-token', '--node', node.id, '--json'])).stdout);
    const at = Date.now();
    const code = await env.exit;
    expect(code).not.toBe(0);
    // Its heartbeat comes every 5 s; the long-polled claim is refused when it ends (≤ 20 s).
    expect(Date.now() - at).toBeLessThan(25_000);
    expect(env.stderr()).toMatch(/platform: the platform refused the node token .*\.\n$/);
    expect(await heartbeat(rotated.token)).toBe(200);

    // Without any token: a usage error naming where the token goes.
    const none = startAgent(['--data-dir', path.join(dataDir, 'none')], { PLATFORM_NODE_TOKEN: '', NODE_AGENT_TOKEN: '' });
    expect(await none.exit).toBe(2);
    expect(none.stderr()).toMatch(/PLATFORM_NODE_TOKEN or --token-file FILE/);
  }, 120_000);

  it('remove answers 409 while a site is placed on the node, and removes it once the site is deleted; its agent is refused', async () => {
    const { key, account } = await t.createKey({ plan: 'pro', account: uniqueName('remove') });
    const node = await register(account, 'busy');
    const agent = startAgent(['--edge-port', String(await freePort()), '--data-dir', path.join(dataDir, 'busy')], {
      PLATFORM_NODE_TOKEN: node.token,
    });
    await until(
      'the node to be reachable',
      async () => (await t.platform.services.publisher.nodes.get(node.id))?.lastHeartbeatAt,
      20_000,
    );
    const created = await t.rest('POST', `${PREFIX}/sites`, {
      key,
      body: { name: 'Placed', deployment_mode: 'connected_node', target_node_id: node.id },
    });
    expect(created.status).toBe(202);
    const projectId = created.body.data.project.id;
    expect((await waitForOperation(t, key, projectId, created.body.data.operation.id, 60_000)).status).toBe('completed');

    const refused = await cli(['nodes', 'remove', '--node', node.id, '--json']);
    expect(refused.code).not.toBe(0);
    const lines = refused.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^platform: node \S+ still has 1 site placed on it; move or delete it first$/);
    await expect(t.platform.services.publisher.nodes.remove(node.id)).rejects.toMatchObject({
      status: 409,
      code: 'node_has_sites',
    });
    expect(await heartbeat(node.token)).toBe(200);

    const del = await t.rest('POST', projectPath(projectId, '/actions'), { key, body: { action: 'delete' } });
    expect(del.status).toBe(202);
    expect((await waitForOperation(t, key, projectId, del.body.data.operation.id, 60_000)).status).toBe('completed');
    const removed = await cli(['nodes', 'remove', '--node', node.id, '--json']);
    expect([removed.code, lastJson(removed.stdout)]).toEqual([0, { id: node.id, removed: true }]);
    expect(await heartbeat(node.token)).toBe(401);
    expect(await agent.exit).not.toBe(0);
    expect(agent.stderr()).toMatch(/refused the node token/);
  }, 120_000);

  it("the hosted node's token is random, stored hashed and sealed, survives a restart, and rotates without stopping its in-process agent", async () => {
    const nodes = t.platform.services.publisher.nodes;
    const token = await nodes.hostedToken();
    expect(token).toMatch(/^pnode_[A-Za-z0-9_-]{43}$/);
    // Not the key-derived token of before: that one is refused.
    const derived = `pnode_${createHmac('sha256', t.platform.config.SECRET_ENCRYPTION_KEY).update('publisher.hosted-node-token.v1').digest('base64url')}`;
    expect(token).not.toBe(derived);
    expect(await heartbeat(derived)).toBe(401);
    const record = await t.platform.conn.collection('publisher_connected_nodes').findOne({ _id: HOSTED_NODE_ID as never });
    expect(JSON.stringify(record)).not.toContain(token!);
    expect(record).toMatchObject({
      tokenHash: expect.stringMatching(/^[0-9a-f]{64}$/),
      tokenSealed: expect.stringMatching(/^v1\./),
    });
    // A restarted process (or another replica) opens the same token.
    expect(await nodes.ensureHosted()).toBe(token);

    // The in-process agent holds the node; the hosted node cannot be removed.
    const holder = await until(
      'the in-process agent to hold the hosted node',
      async () => (await nodes.get(HOSTED_NODE_ID))?.leaseHolder,
      20_000,
    );
    const remove = await cli(['nodes', 'remove', '--node', HOSTED_NODE_ID, '--json']);
    expect(remove.code).not.toBe(0);
    expect(remove.stderr).toMatch(/cannot be removed/);

    const rotated = lastJson((await cli(['nodes', 'rotate-token', '--node', HOSTED_NODE_ID, '--json'])).stdout).token as string;
    expect(rotated).not.toBe(token);
    expect(await heartbeat(token!)).toBe(401);
    expect(await nodes.hostedToken()).toBe(rotated);
    // The in-process agent picks the new token up from the record and keeps the lease.
    const after = Date.now();
    await until(
      'the in-process agent to heartbeat after the rotation',
      async () => ((await nodes.get(HOSTED_NODE_ID))?.lastHeartbeatAt?.getTime() ?? 0) > after + 100,
      15_000,
    );
    expect((await nodes.get(HOSTED_NODE_ID))?.leaseHolder).toBe(holder);
  }, 60_000);
});
