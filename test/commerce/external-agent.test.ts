import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { NodeAgent } from '../../dataplane/agent/agent';
import { simulatedNodeExecutor } from '../../dataplane/stand-in/simulated-executor';
import { NODE_AGENT_PATH, NODE_TOKEN_HEADER } from '../../dataplane/agent/wire';
import { productionHost, releaseHost } from '../../dataplane/releases';
import { HOSTED_NODE_ID } from '../../nodes/registry';
import { freePort } from '../support/edge';
import { startTestPlatform, uniqueName, type TestPlatform } from '../support/platform';
import { base, cli, connectStorefront, tenant, waitRelease } from './support';

/**
 * Commerce releases run by an agent outside the platform's process
 * (docs/decisions/0365-agent-fetches-extras-and-releases.md): with `PUBLISHER_HOSTED_AGENT=external`
 * the hosted node's agent is the node agent's code talking to the agent API over HTTP, as
 * `platform nodes agent` does; it reads each release's environment and bundle through the agent API
 * (for a task its node holds) and serves the release on its own edge. Before 0365 it answered the
 * release tasks `unknown_step`. The agent API refuses a node what belongs to another node.
 */
jest.setTimeout(240_000);

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'commerce');
const SECRETS = { session_secret: 'session-secret-ext-4b1d', private_storefront_token: 'private-token-ext-90cd' };

const BIN = path.join(__dirname, '..', '..', 'bin', 'platform.js');
let t: TestPlatform;
let agent: NodeAgent;
let dataDir: string;
let cliAgent: ChildProcess | undefined;

beforeAll(async () => {
  t = await startTestPlatform({ PUBLISHER_HOSTED_AGENT: 'external', COMMERCE_HEALTH_GATE_MS: '8000' });
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'external-agent-'));
  // The hosted node's token, as `nodes rotate-token --node hosted` prints one to an operator.
  const token = await t.platform.services.publisher.nodes.hostedToken();
  agent = new NodeAgent({
    apiUrl: t.bridgeUrl,
    token: token!,
    dataDir,
    edgePort: 0,
    executor: simulatedNodeExecutor(),
    claimWaitMs: 2_000,
    // As cli/nodes-agent.ts gives every agent.
    releaseHost: { releasesRoot: path.join(dataDir, 'releases') },
  });
  await agent.start();
});
afterAll(async () => {
  if (cliAgent && cliAgent.exitCode === null && cliAgent.signalCode === null) cliAgent.kill('SIGKILL');
  await agent?.stop();
  await t?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

/** A request to an agent's edge (default: the class agent's) with a release's `Host`. */
function viaAgent(
  host: string,
  urlPath = '/',
  port = Number(new URL(agent.edgeUrl).port),
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: urlPath, headers: { host: `${host}:${port}` } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

const agentCall = (token: string, method: 'GET' | 'POST', p: string, body?: unknown) =>
  fetch(`${t.bridgeUrl}${NODE_AGENT_PATH}${p}`, {
    method,
    headers: { [NODE_TOKEN_HEADER]: token, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });

const tasks = () => t.platform.conn.collection('publisher_node_tasks');

/** A tenant's storefront with the preview environment's secrets, and its preview release once it settled. */
async function previewRelease() {
  const tn = await tenant(t);
  await connectStorefront(t, tn);
  const env = { storefront_id: '3f2b8c1e-6d4a-4e8b-9c2d-1a2b3c4d5e6f', ...SECRETS };
  expect((await t.rest('PUT', `${base(tn.projectId)}/environments/preview`, { key: tn.key, body: env })).status).toBe(200);
  const deployed = await cli(t, 'commerce deploy', {
    project: tn.projectId,
    environment: 'preview',
    bundle: path.join(FIXTURES, 'storefront'),
  });
  const release = await waitRelease(t, tn.key, tn.projectId, deployed.release_id, 60_000);
  return { tn, releaseId: deployed.release_id as string, release };
}

describe('an external hosted agent', () => {
  it("runs a release's start and promotion from the agent API: environment and bundle over HTTP, served on its own edge, analytics and the degraded rule reported back; no secret in a task record", async () => {
    const { tn, releaseId, release } = await previewRelease();
    const B = base(tn.projectId);
    expect(release).toMatchObject({ status: 'healthy', error_code: null });
    // The task was the hosted node's, claimed by this agent (its session), not answered `unknown_step`.
    const start = await tasks().findOne({ step: 'release_start', 'release.releases.releaseId': releaseId });
    expect(start).toMatchObject({ nodeId: HOSTED_NODE_ID, status: 'succeeded', claimedBy: agent.session });

    // It runs on the agent's edge with the environment it read through the agent API.
    const page = await viaAgent(releaseHost(releaseId));
    expect(page.status).toBe(200);
    expect(JSON.parse(page.body).env_names).toEqual([
      'PRIVATE_STOREFRONT_API_TOKEN',
      'PUBLIC_STOREFRONT_ID',
      'PUBLIC_STORE_DOMAIN',
      'SESSION_SECRET',
    ]);

    // Promotion: a task the agent runs too; the production address routes to the release on its edge.
    const promote = await t.rest('POST', `${B}/storefront/promotions`, { key: tn.key, body: { preview_id: releaseId } });
    expect(promote.status).toBeLessThan(300);
    // (The contract: the production address switches within 5 s of the answer.)
    const until = Date.now() + 5_000;
    while (agent.plane.edge.route(productionHost(tn.projectId))?.owner !== releaseId && Date.now() < until)
      await new Promise((res) => setTimeout(res, 100));
    expect(agent.plane.edge.route(productionHost(tn.projectId))?.owner).toBe(releaseId);
    expect((await viaAgent(productionHost(tn.projectId))).status).toBe(200);

    // What its edge served reaches the platform through the agent API: storefront analytics count the
    // production address's requests (1 above, 5 more, 20 answered 500), and 20 of 26 in the window
    // turn the release degraded.
    for (let i = 0; i < 5; i++) expect((await viaAgent(productionHost(tn.projectId))).status).toBe(200);
    for (let i = 0; i < 20; i++) expect((await viaAgent(productionHost(tn.projectId), '/boom')).status).toBe(500);
    const analytics = async () => (await t.rest('GET', `${B}/storefront/analytics?range=1h`, { key: tn.key })).body.data?.totals;
    const seen = Date.now() + 10_000;
    while (!((await analytics())?.requests >= 26) && Date.now() < seen) await new Promise((res) => setTimeout(res, 250));
    expect(await analytics()).toEqual({ requests: 26, errors: 20 });
    const settled = Date.now() + 10_000;
    let status = '';
    while (status !== 'degraded' && Date.now() < settled) {
      const items = (await t.rest('GET', `${B}/releases`, { key: tn.key })).body.data.items as Array<{
        id: string;
        status: string;
      }>;
      status = items.find((x) => x.id === releaseId)?.status ?? '';
      if (status !== 'degraded') await new Promise((res) => setTimeout(res, 250));
    }
    expect(status).toBe('degraded');

    // The secrets crossed the protocol, never a task record.
    const stored = JSON.stringify(await tasks().find({}).toArray());
    for (const v of Object.values(SECRETS)) expect(stored).not.toContain(v);
  });

  it('refuses a node a release of a task it does not hold, a site not placed on it (404, the secrets not sent), and release observations unless it is the hosted node', async () => {
    const hostedToken = (await t.platform.services.publisher.nodes.hostedToken())!;
    const { accountId } = await t.createKey({ account: uniqueName('ext-nodes') });
    const nodes = t.platform.services.publisher.nodes;
    const a = await nodes.register(accountId, uniqueName('node-a'));
    const b = await nodes.register(accountId, uniqueName('node-b'));

    // A release task of the hosted node, claimed (as an agent of that node would hold it).
    const { tn, releaseId } = await previewRelease();
    const taskId = `held:${uniqueName('task')}`;
    await tasks().insertOne({
      _id: taskId as never,
      nodeId: HOSTED_NODE_ID,
      siteId: releaseId,
      operationId: 'held',
      operationType: 'commerce.release',
      step: 'release_start',
      release: { releases: [{ releaseId, projectId: tn.projectId, production: false, healthy: false }] },
      status: 'claimed',
      claimedBy: 'another-session',
      claimedAt: new Date(),
      createdAt: new Date(),
    });
    const p = `/tasks/${encodeURIComponent(taskId)}/releases/${releaseId}`;
    const own = await agentCall(hostedToken, 'GET', p);
    expect(own.status).toBe(200);
    expect(own.headers.get('cache-control')).toBe('no-store');
    expect(((await own.json()) as any).data.run.env.SESSION_SECRET).toBe(SECRETS.session_secret);
    const bytes = await agentCall(hostedToken, 'GET', `${p}/bundle`);
    expect([bytes.status, bytes.headers.get('content-type')]).toEqual([200, 'application/x-tar']);
    await bytes.arrayBuffer();

    // Another node's token: the same paths answer 404 and carry no secret.
    for (const q of [p, `${p}/bundle`, `${p}/wanted`]) {
      const res = await agentCall(a.token, 'GET', q);
      const text = await res.text();
      expect([res.status, JSON.parse(text).error.code]).toEqual([404, 'task_not_found']);
      expect(text).not.toContain(SECRETS.session_secret);
    }
    // A release the held task does not name: refused to the holder too.
    expect((await agentCall(hostedToken, 'GET', `/tasks/${encodeURIComponent(taskId)}/releases/other-release`)).status).toBe(404);
    // A finished task is held by no one.
    await tasks().updateOne({ _id: taskId as never }, { $set: { status: 'succeeded' } });
    expect((await agentCall(hostedToken, 'GET', p)).status).toBe(404);

    // Sites' extras: a hosted site's to the hosted node only; a connected site's to its own node only.
    const Site = t.platform.services.publisher.sites.models.Site;
    const hostedSite = `hosted-${uniqueName('s')}`;
    const onA = `on-a-${uniqueName('s')}`;
    await Site.collection.insertOne({ _id: hostedSite as never, slug: hostedSite, deploymentMode: 'hosted', targetNodeId: null });
    await Site.collection.insertOne({ _id: onA as never, slug: onA, deploymentMode: 'connected_node', targetNodeId: a._id });
    const extras = (token: string, ids: string[]) => agentCall(token, 'POST', '/sites/extras', { site_ids: ids });
    expect(await (await extras(a.token, [onA])).json()).toMatchObject({ success: true, data: { extras: { [onA]: {} } } });
    for (const [token, ids] of [
      [b.token, [onA]],
      [a.token, [hostedSite]],
      [a.token, [onA, hostedSite]],
      [hostedToken, [onA]],
    ] as const) {
      const res = await extras(token, [...ids]);
      expect([res.status, ((await res.json()) as any).error.code]).toEqual([404, 'site_not_on_node']);
    }
    // Only the hosted node runs releases: another node's report of what they served is refused.
    const report = await agentCall(a.token, 'POST', '/releases/observations', {
      degraded: [{ release_id: releaseId, requests: 30, errors: 30 }],
    });
    expect([report.status, ((await report.json()) as any).error.code]).toEqual([403, 'not_the_hosted_node']);
    const forged = await extras('pnode_' + 'A'.repeat(43), [onA]);
    expect(forged.status).toBe(401);
  });

  it('`platform nodes agent`, its own process, takes the hosted node over and runs a new release on its edge', async () => {
    // The class agent gives the node's lease up; the CLI agent (the built bin, as an operator runs it) holds it next.
    await agent.stop();
    const edgePort = await freePort();
    let stderr = '';
    cliAgent = spawn(
      process.execPath,
      [BIN, 'nodes', 'agent', '--api-url', t.bridgeUrl, '--edge-port', String(edgePort), '--data-dir', path.join(dataDir, 'cli')],
      {
        env: {
          ...process.env,
          PLATFORM_NODE_TOKEN: (await t.platform.services.publisher.nodes.hostedToken())!,
          NODE_AGENT_EXECUTOR: 'simulated',
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    cliAgent.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const deadline = Date.now() + 20_000;
    while (!stderr.includes('connected') && Date.now() < deadline) await new Promise((res) => setTimeout(res, 100));
    expect(stderr).toContain('connected');

    const { releaseId, release } = await previewRelease();
    expect(release).toMatchObject({ status: 'healthy', error_code: null });
    const page = await viaAgent(releaseHost(releaseId), '/', edgePort);
    expect(page.status).toBe(200);
    expect(JSON.parse(page.body).env_names).toContain('SESSION_SECRET');
  });
});
