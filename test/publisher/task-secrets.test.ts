import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { NodeAgent } from '../../dataplane/agent/agent';
import { simulatedNodeExecutor } from '../../dataplane/stand-in/simulated-executor';
import type { AgentTask } from '../../dataplane/agent/wire';
import { startTestPlatform, uniqueName, type TestPlatform } from '../support/platform';
import { PREFIX, projectPath, waitForOperation } from './support';

/**
 * No secret at rest in plain text (docs/contracts.md "Tenant isolation", docs/decisions/0270): what a
 * node's `configure_site` returns (the site's Admin API key and owner password) is sealed before the
 * task record stores it, and finished tasks are deleted after PUBLISHER_NODE_TASK_RETENTION_MS. A site
 * is provisioned through a connected node (an agent in this process over the bridge's HTTP, the
 * simulated node executor, whose secrets are random), taken through its lifecycle, and every
 * document of every collection of the platform's database is searched for the secrets the agent
 * reported. (Site database passwords exist only for hosted sites on MySQL, sealed by 0220: the
 * scan looks for every `…key`/`…password` value the node returned.)
 */

let t: TestPlatform;
let dataDir: string;
let agent: NodeAgent | null = null;
/** What the node's executor returned, as it went to the platform. */
const reported: Array<{ task: AgentTask; result: Record<string, unknown> }> = [];

beforeAll(async () => {
  t = await startTestPlatform({ PUBLISHER_NODE_WAIT_MS: '30000' });
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'task-secrets-'));
});
afterAll(async () => {
  await agent?.stop();
  await t?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

/** Every document of every collection, as text, with where it came from. */
async function everyDocument(): Promise<Array<{ where: string; text: string }>> {
  const db = t.platform.conn.db!;
  const out: Array<{ where: string; text: string }> = [];
  for (const c of await db.listCollections().toArray()) {
    for (const doc of await db.collection(c.name).find({}).toArray())
      out.push({ where: `${c.name}/${String(doc._id)}`, text: JSON.stringify(doc) });
  }
  return out;
}

/** The secrets the node reported: every string value of a field named like a key or a password. */
function secrets(): Array<{ what: string; value: string }> {
  return reported.flatMap(({ task, result }) =>
    Object.entries(result).flatMap(([field, value]) =>
      /(key|password)$/.test(field) && typeof value === 'string'
        ? [
            { what: `${task.step}.${field}`, value },
            // The secret half of an Admin API key (`id:secret`) counts on its own.
            ...(value.includes(':') ? [{ what: `${task.step}.${field} (secret part)`, value: value.split(':').pop()! }] : []),
          ]
        : [],
    ),
  );
}

async function plainTextFound(): Promise<string[]> {
  const docs = await everyDocument();
  return secrets().flatMap(({ what, value }) => docs.filter((d) => d.text.includes(value)).map((d) => `${what} in ${d.where}`));
}

async function run(key: string, projectId: string, method: string, suffix: string, body: unknown = {}) {
  const res = await t.rest(method, projectPath(projectId, suffix), { key, body });
  expect(res.status).toBe(202);
  const op = await waitForOperation(t, key, projectId, res.body.data.operation.id, 60_000);
  expect([op.status, op.error_code]).toEqual(['completed', null]);
  return res.body.data;
}

describe('secrets in node task results', () => {
  it('keeps no Admin API key or owner password in plain text in any collection through a site’s lifecycle on a node', async () => {
    const { key, accountId } = await t.createKey({ plan: 'pro', account: uniqueName('task-secrets') });
    const node = await t.platform.services.publisher.nodes.register(accountId, 'sealed', ['role:secrets']);
    agent = new NodeAgent({
      apiUrl: t.bridgeUrl,
      token: node.token,
      dataDir,
      edgePort: 0,
      executor: simulatedNodeExecutor(20),
    });
    const run0 = agent.executor.run.bind(agent.executor);
    agent.executor.run = async (task, progress) => {
      const result = await run0(task, progress);
      if (result) reported.push({ task, result });
      return result;
    };
    await agent.start();

    const created = await t.rest('POST', `${PREFIX}/sites`, {
      key,
      body: { name: 'Sealed', deployment_mode: 'connected_node', target_node_id: node._id },
    });
    expect(created.status).toBe(202);
    const projectId = created.body.data.project.id;
    const provision = await waitForOperation(t, key, projectId, created.body.data.operation.id, 60_000);
    expect([provision.status, provision.error_code]).toEqual(['completed', null]);

    // The node reported the site's admin access ...
    const configured = reported.find((r) => r.task.step === 'configure_site')!.result;
    expect(configured).toMatchObject({ admin_api_key: expect.any(String), owner_password: expect.any(String) });
    expect(secrets().length).toBeGreaterThanOrEqual(3);
    // ... which the platform keeps, sealed, and opens for the operator ...
    expect(await t.platform.services.publisher.real.adminAccess(projectId)).toMatchObject({
      adminApiKey: configured.admin_api_key,
    });
    // ... and no collection holds any of it in clear: the task record holds it sealed.
    expect(await plainTextFound()).toEqual([]);
    const task = await t.platform.conn
      .collection('publisher_node_tasks')
      .findOne({ _id: `${created.body.data.operation.id}:configure_site` as never });
    expect(task?.result).toMatchObject({
      admin_api_key: expect.stringMatching(/^v1\./),
      owner_password: expect.stringMatching(/^v1\./),
    });

    // Through the rest of the lifecycle: a stop, a start, a deletion.
    await run(key, projectId, 'POST', '/actions', { action: 'stop' });
    await run(key, projectId, 'POST', '/actions', { action: 'start' });
    expect(await plainTextFound()).toEqual([]);
    await run(key, projectId, 'POST', '/actions', { action: 'delete' });
    expect(await plainTextFound()).toEqual([]);
  }, 120_000);

  it('deletes finished tasks once they are older than the retention (PUBLISHER_NODE_TASK_RETENTION_MS, default 1 h)', async () => {
    const tasks = t.platform.conn.collection('publisher_node_tasks');
    const finished = await tasks.countDocuments({ status: { $in: ['succeeded', 'failed'] } });
    expect(finished).toBeGreaterThan(0);
    const api = t.platform.services.publisher.nodeAgent;
    // Younger than the retention: kept.
    expect(await api.sweepFinished()).toBe(0);
    expect(await tasks.countDocuments({ status: { $in: ['succeeded', 'failed'] } })).toBe(finished);
    // An open task is never swept, however old.
    await tasks.insertOne({
      _id: 'sweep-test:pending' as never,
      nodeId: 'n',
      siteId: 's',
      operationId: 'sweep-test',
      operationType: 'provision',
      step: 'start_runtime',
      site: {},
      status: 'pending',
      createdAt: new Date(0),
      finishedAt: null,
    });
    // Once the retention has passed (one hour and a second on), every finished task goes.
    expect(await api.sweepFinished(Date.now() + 3_600_000 + 1_000)).toBe(finished);
    expect(await tasks.countDocuments({ status: { $in: ['succeeded', 'failed'] } })).toBe(0);
    expect(await tasks.countDocuments({ _id: 'sweep-test:pending' as never })).toBe(1);
  });
});
