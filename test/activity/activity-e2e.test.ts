import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { agentsAct } from '../../subgraphs/activity/cli';
import type { ActivityService } from '../../subgraphs/activity/service';
import { connectApp, tenant as commerceTenant } from '../commerce/support';
import { waitForOperation } from '../publisher/support';
import { startTestPlatform, type TestPlatform } from '../support/platform';

// The machine is shared: projections and feeds get minutes, not seconds, under heavy load.
jest.setTimeout(180_000);
/**
 * Operation and agent activity end to end: REST through the bridge and router, the CLI, and the
 * graphql-ws feed, on the whole platform in-process against real Kafka and MongoDB-wire.
 */
const BIN = path.join(__dirname, '..', '..', 'bin', 'platform.js');
let t: TestPlatform;

beforeAll(async () => {
  // Steps of 250 ms: a provisioning lasts long enough for a subscriber to watch it.
  t = await startTestPlatform({ SIMULATED_STEP_DELAY_MS: '250' });
});
afterAll(async () => {
  await t.stop();
});

const feed = (projectId: string, suffix = '') => `/api/v1/projects/${projectId}/operation-activity${suffix}`;
const agentFeed = (projectId: string, suffix = '') => `/api/v1/projects/${projectId}/agent-activity${suffix}`;

async function until<T>(fn: () => Promise<T | undefined | null | false>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function createSite(key: string) {
  const res = await t.rest('POST', '/api/v1/publisher/sites', { key, body: { name: 'Activity Site' } });
  expect(res.status).toBe(202);
  return { projectId: res.body.data.project.id as string, operationId: res.body.data.operation.id as string };
}

async function act(account: string, projectId: string, actionKey: string, extra: Record<string, string> = {}) {
  return (await agentsAct.run({
    values: { account, project: projectId, 'action-key': actionKey, ...extra },
    services: (t.platform.services as unknown as { activity: ActivityService }).activity,
    ctx: undefined as never,
  })) as { action_id: string; approval_id: string | null; action_hash: string; objective_id: string };
}

describe('operation activity through the bridge', () => {
  it("streams a site's provisioning live to completed, then reads it back in the contract-v1 shape", async () => {
    const { key } = await t.createKey();
    const site = await createSite(key);
    const client = createClient({
      url: t.routerUrl.replace(/^http/, 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${key}` },
      retryAttempts: 0,
    });
    const seen: any[] = [];
    const errors: unknown[] = [];
    const stop = client.subscribe(
      { query: 'subscription($p: ID!) { operationActivity(projectId: $p) }', variables: { p: site.projectId } },
      {
        next: (v) => (v.errors ? errors.push(v.errors) : seen.push(v.data!.operationActivity)),
        error: (e) => errors.push(e),
        complete: () => undefined,
      },
    );
    try {
      await until(async () => seen.some((i) => i.id === `operation:${site.operationId}` && i.status === 'completed'));
    } finally {
      stop();
      await client.dispose();
    }
    expect(errors).toEqual([]);
    const mine = seen.filter((i) => i.id === `operation:${site.operationId}`);
    expect(mine.some((i) => i.status === 'running' && i.current_step)).toBe(true);

    const res = await t.rest('GET', feed(site.projectId), { key });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    const data = res.body.data;
    expect(Object.keys(data).sort()).toEqual(
      [
        'availability',
        'contract_version',
        'current',
        'current_complete',
        'history',
        'observed_at',
        'scope',
        'unresolved_references',
      ].sort(),
    );
    expect(data).toMatchObject({
      contract_version: 1,
      scope: { type: 'project', id: site.projectId },
      current: [],
      current_complete: true,
    });
    expect(data.history).toMatchObject({ limit: 25, complete: true, has_more: false, next_cursor: null });
    expect(data.history.items[0]).toEqual(mine[mine.length - 1]);
    expect(data.history.items[0]).toMatchObject({ status: 'completed', source: { kind: 'operation', status: 'completed' } });

    const exact = await t.rest('GET', feed(site.projectId, `/${encodeURIComponent(`operation:${site.operationId}`)}`), { key });
    expect(exact.status).toBe(200);
    expect(exact.body.data.item).toEqual(data.history.items[0]);
  });

  it('refuses every malformed query with 400 and other accounts with 404', async () => {
    const { key } = await t.createKey();
    const other = await t.createKey();
    const site = await createSite(key);
    const item = `/${encodeURIComponent(`operation:${site.operationId}`)}`;
    for (const q of ['?limit=0', '?limit=101', '?limit=x', '?limit=1&limit=2', '?cursor=', '?cursor=abc', '?foo=1']) {
      const r = await t.rest('GET', feed(site.projectId, q), { key });
      expect([q, r.status, r.body.success]).toEqual([q, 400, false]);
    }
    expect((await t.rest('GET', feed(site.projectId, `${item}?limit=1`), { key })).status).toBe(400);
    expect((await t.rest('GET', feed('not-a-uuid'), { key })).status).toBe(400);
    expect((await t.rest('GET', feed(site.projectId, '/operation%3Anope'), { key })).status).toBe(400);
    const foreign = await t.rest('GET', feed(site.projectId), { key: other.key });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('activity_not_found');
    expect((await t.rest('GET', feed(site.projectId, item), { key: other.key })).status).toBe(404);
    expect((await t.rest('GET', feed(site.projectId))).status).toBe(401);
    expect((await t.rest('GET', `/api/v1/applications/${site.projectId}/operation-activity`, { key })).status).toBe(404);
  });
});

describe('application and database scopes', () => {
  it("a site's managed database has its id in the metadata and its own feeds; only the owner's project sees them", async () => {
    const { key, account } = await t.createKey({ role: 'owner' });
    const other = await t.createKey();
    const site = await createSite(key);
    await waitForOperation(t, key, site.projectId, site.operationId);
    const meta = await t.rest('GET', `/api/v1/publisher/projects/${site.projectId}/metadata`, { key });
    const databaseId = meta.body.data.database.id as string;
    expect(databaseId).toMatch(/^[0-9a-f-]{36}$/);

    const db = await until(async () => {
      const r = await t.rest('GET', `/api/v1/databases/${databaseId}/operation-activity`, { key });
      return r.status === 200 && r.body.data.history.items.some((i: any) => i.id === `operation:${site.operationId}`) && r;
    });
    expect(db.body.data.scope).toEqual({ type: 'database', id: databaseId });
    const nested = await t.rest('GET', `/api/v1/projects/${site.projectId}/databases/${databaseId}/operation-activity`, { key });
    expect(nested.status).toBe(200);
    expect(nested.body.data.history.items.map((i: any) => i.id)).toEqual(db.body.data.history.items.map((i: any) => i.id));
    const elsewhere = await createSite(key);
    expect(
      (await t.rest('GET', `/api/v1/projects/${elsewhere.projectId}/databases/${databaseId}/operation-activity`, { key })).status,
    ).toBe(404);
    expect((await t.rest('GET', `/api/v1/databases/${databaseId}/operation-activity`, { key: other.key })).status).toBe(404);

    // Agent activity of the database: the project's `database.*` actions only.
    const dbAction = await act(account, site.projectId, 'database.snapshot.read', { approval: 'none' });
    await act(account, site.projectId, 'publisher.site.read', { approval: 'none' });
    const agents = await t.rest('GET', `/api/v1/databases/${databaseId}/agent-activity`, { key });
    expect(agents.status).toBe(200);
    expect(agents.body.data.history.items.map((i: any) => i.id)).toEqual([dbAction.action_id]);
  });

  it("an application is a project's commerce connection: its connect operation shows in the application's feed", async () => {
    const tn = await commerceTenant(t);
    await connectApp(t, tn);
    const r = await until(async () => {
      const res = await t.rest('GET', `/api/v1/applications/${tn.projectId}/operation-activity`, { key: tn.key });
      return res.status === 200 && res.body.data.history.items.length > 0 && res;
    });
    expect(r.body.data.scope).toEqual({ type: 'application', id: tn.projectId });
    expect(r.body.data.history.items[0].type).toBe('commerce.connect');
    const other = await t.createKey();
    expect((await t.rest('GET', `/api/v1/applications/${tn.projectId}/operation-activity`, { key: other.key })).status).toBe(404);
  });
});

describe('agent activity and decisions through the bridge', () => {
  it('an approved publisher.site.restart originates the restart operation, linked as originated', async () => {
    const { key, account } = await t.createKey({ role: 'owner' });
    const site = await createSite(key);
    await waitForOperation(t, key, site.projectId, site.operationId);
    const acted = await act(account, site.projectId, 'publisher.site.restart');

    const list = await t.rest('GET', agentFeed(site.projectId), { key });
    expect(list.status).toBe(200);
    expect(list.body.data).toMatchObject({
      contract_version: 1,
      pending_complete: true,
      current_complete: true,
      availability: { complete: true },
    });
    const pending = list.body.data.pending[0];
    expect(pending.approval).toMatchObject({
      can_decide: true,
      action_hash: acted.action_hash,
      decision_path: `/api/v1/agents/approvals/${acted.approval_id}/decision`,
    });

    const bad = await t.rest('POST', pending.approval.decision_path, { key, body: { decision: 'approved', action_hash: 'x' } });
    expect(bad.status).toBe(409);
    const extra = await t.rest('POST', pending.approval.decision_path, {
      key,
      body: { decision: 'approved', action_hash: acted.action_hash, x: 1 },
    });
    expect(extra.status).toBe(400);

    const ok = await t.rest('POST', pending.approval.decision_path, {
      key,
      body: { decision: 'approved', action_hash: acted.action_hash },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({ id: acted.approval_id, status: 'approved', continuation: { status: 'settled' } });
    const [link] = ok.body.data.continuation.operations;
    expect(link).toMatchObject({ relation: 'originated', resource: { type: 'site', id: site.projectId } });
    const again = await t.rest('POST', pending.approval.decision_path, {
      key,
      body: { decision: 'approved', action_hash: acted.action_hash },
    });
    expect(again.body.data.continuation.operations).toEqual([link]);
    const opposite = await t.rest('POST', pending.approval.decision_path, {
      key,
      body: { decision: 'denied', action_hash: acted.action_hash },
    });
    expect(opposite.status).toBe(409);

    const opId = link.activity_id.slice('operation:'.length);
    const op = await waitForOperation(t, key, site.projectId, opId);
    expect(op).toMatchObject({ status: 'completed' });
    const exact = await t.rest('GET', agentFeed(site.projectId, `/${encodeURIComponent(acted.action_id)}`), { key });
    expect(exact.body.data.item).toMatchObject({
      status: 'succeeded',
      operations: [link],
      authorization: { outcome: 'human_approved', basis: 'human_decision' },
    });
    const objective = await until(async () => {
      const r = await t.rest('GET', `/api/v1/agents/objectives/${acted.objective_id}/operation-activity`, { key });
      return r.body.data?.history.items.length === 1 && r;
    });
    expect(objective.body.data.history.items[0].id).toBe(link.activity_id);
  });

  it('streams agent actions of a project live: pending, then succeeded once approved', async () => {
    const { key, account } = await t.createKey();
    const site = await createSite(key);
    const client = createClient({
      url: t.routerUrl.replace(/^http/, 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${key}` },
      retryAttempts: 0,
    });
    const seen: any[] = [];
    const stop = client.subscribe(
      { query: 'subscription($p: ID!) { agentActivity(projectId: $p) }', variables: { p: site.projectId } },
      { next: (v) => seen.push(v.data?.agentActivity), error: () => undefined, complete: () => undefined },
    );
    try {
      await new Promise((r) => setTimeout(r, 500));
      const acted = await act(account, site.projectId, 'application.config.update');
      await until(async () => seen.some((i) => i?.id === acted.action_id && i.status === 'pending_approval'));
      const ok = await t.rest('POST', `/api/v1/agents/approvals/${acted.approval_id}/decision`, {
        key,
        body: { decision: 'approved', action_hash: acted.action_hash },
      });
      expect(ok.status).toBe(200);
      await until(async () => seen.some((i) => i?.id === acted.action_id && i.status === 'succeeded'));
    } finally {
      stop();
      await client.dispose();
    }
    // Another account cannot watch this project.
    const other = await t.createKey();
    const intruder = createClient({
      url: t.routerUrl.replace(/^http/, 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${other.key}` },
      retryAttempts: 0,
    });
    const refusal = await new Promise<unknown>((resolve) => {
      intruder.subscribe(
        { query: 'subscription($p: ID!) { agentActivity(projectId: $p) }', variables: { p: site.projectId } },
        { next: (v) => resolve(v.errors ?? v), error: (e) => resolve(e), complete: () => resolve('complete') },
      );
    });
    await intruder.dispose();
    expect(JSON.stringify(refusal)).toContain('activity_not_found');
  });

  it('streams by scope as the REST reads do: a database, its actions under `database.`, and account-wide actions in a project feed', async () => {
    const { key, account } = await t.createKey();
    const site = await createSite(key);
    await waitForOperation(t, key, site.projectId, site.operationId);
    const meta = await t.rest('GET', `/api/v1/publisher/projects/${site.projectId}/metadata`, { key });
    const databaseId = meta.body.data.database.id as string;
    const client = createClient({
      url: t.routerUrl.replace(/^http/, 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${key}` },
      retryAttempts: 0,
    });
    const watch = (query: string, variables: Record<string, unknown>) => {
      const got: any[] = [];
      const errors: unknown[] = [];
      const stop = client.subscribe(
        { query, variables },
        {
          next: (v) => (v.errors ? errors.push(v.errors) : got.push(Object.values(v.data!)[0])),
          error: (e) => errors.push(e),
          complete: () => undefined,
        },
      );
      return { got, errors, stop };
    };
    const scoped = (field: string) => `subscription($s: ActivityScopeInput!) { ${field}(scope: $s) }`;
    const database = { type: 'database', id: databaseId, projectId: site.projectId };
    const dbOps = watch(scoped('operationActivity'), { s: database });
    const dbActions = watch(scoped('agentActivity'), { s: database });
    const projectActions = watch('subscription($p: ID!) { agentActivity(projectId: $p) }', { p: site.projectId });
    try {
      await new Promise((r) => setTimeout(r, 500));
      // A site operation is about the database's site: the database scope streams it.
      const restart = await t.rest('POST', `/api/v1/publisher/projects/${site.projectId}/actions`, {
        key,
        body: { action: 'restart' },
      });
      expect(restart.status).toBe(202);
      const restartId = `operation:${restart.body.data.operation.id}`;
      await until(async () => dbOps.got.some((i) => i.id === restartId));

      // Agent actions: `database.*` reaches the database scope, `publisher.*` only the project's feed.
      const onDatabase = await act(account, site.projectId, 'database.backup.create');
      const onSite = await act(account, site.projectId, 'publisher.site.restart');
      // Account-wide (an Assets tool call has no project): every project feed of the account lists it.
      const services = t.platform.services as unknown as { activity: ActivityService };
      const accountWide = await services.activity.actions
        .port(() => 'assets')
        .propose({
          actionKey: 'assets.bucket.delete',
          accountId: (await t.platform.services.identity.ensureAccount(account))._id,
          scope: { type: 'account' },
          approvalId: randomUUID(),
          actionHash: 'h',
          title: 'Delete bucket',
          summary: 'An account-wide action',
          risk: 'high',
          expiresAt: new Date(Date.now() + 3_600_000),
          principal: { type: 'api_key', id: null },
        });
      const accountWideId = `agent_tool_execution:${accountWide.actionId}`;
      await until(async () =>
        [onDatabase.action_id, onSite.action_id, accountWideId].every((id) => projectActions.got.some((i) => i.id === id)),
      );
      await until(async () => dbActions.got.some((i) => i.id === onDatabase.action_id));
      await new Promise((r) => setTimeout(r, 1_000));
      expect(dbActions.got.map((i) => i.id)).not.toContain(onSite.action_id);
      expect(dbActions.got.map((i) => i.id)).not.toContain(accountWideId);
      expect(dbOps.errors).toEqual([]);
      expect(dbActions.errors).toEqual([]);
      expect(projectActions.errors).toEqual([]);
    } finally {
      dbOps.stop();
      dbActions.stop();
      projectActions.stop();
    }
    // A database named with another project, an unknown one, or both arguments at once: not found.
    const other = await createSite(key);
    const refused = async (variables: Record<string, unknown>, query = scoped('operationActivity')) => {
      const r = watch(query, variables);
      await until(async () => r.errors.length > 0 || r.got.length > 0, 20_000);
      r.stop();
      return JSON.stringify(r.errors);
    };
    expect(await refused({ s: { ...database, projectId: other.projectId } })).toContain('activity_not_found');
    expect(await refused({ s: { type: 'database', id: randomUUID() } })).toContain('activity_not_found');
    expect(
      await refused(
        { s: database, p: site.projectId },
        'subscription($s: ActivityScopeInput!, $p: ID!) { operationActivity(scope: $s, projectId: $p) }',
      ),
    ).toContain('activity_not_found');
    await client.dispose();
  });

  it('expired approvals answer 410; withheld actions offer no decision', async () => {
    const { key, account } = await t.createKey();
    const site = await createSite(key);
    const expired = await act(account, site.projectId, 'publisher.site.restart', { 'expires-in': '0' });
    const gone = await t.rest('POST', `/api/v1/agents/approvals/${expired.approval_id}/decision`, {
      key,
      body: { decision: 'approved', action_hash: expired.action_hash },
    });
    expect(gone.status).toBe(410);
    const withheld = await act(account, site.projectId, 'application.manifest.apply');
    const list = await t.rest('GET', agentFeed(site.projectId), { key });
    expect(list.body.data.pending.find((i: any) => i.id === withheld.action_id).approval).toMatchObject({
      can_decide: false,
      can_recover: false,
    });
    const refused = await t.rest('POST', `/api/v1/agents/approvals/${withheld.approval_id}/decision`, {
      key,
      body: { decision: 'approved', action_hash: withheld.action_hash },
    });
    expect(refused.status).toBe(409);
    const unknown = await t.rest('POST', `/api/v1/agents/approvals/${site.projectId}/decision`, {
      key,
      body: { decision: 'approved', action_hash: 'x' },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('activity_not_found');
  });

  it('`agents act --json` prints one JSON object on the last line; usage errors exit 2', async () => {
    const { key, account } = await t.createKey();
    const site = await createSite(key);
    const env = {
      ...process.env,
      MONGODB_URI: `mongodb://127.0.0.1:27017/${t.platform.conn.name}`,
      KAFKA_TOPIC_PREFIX: `t${t.id}`,
      LOG_LEVEL: 'silent',
    };
    const run = async (args: string[]) => {
      try {
        const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, ...args], { env });
        return { code: 0, stdout, stderr };
      } catch (e) {
        return e as { code: number; stdout: string; stderr: string };
      }
    };
    const ok = await run([
      'agents',
      'act',
      '--account',
      account,
      '--project',
      site.projectId,
      '--action-key',
      'publisher.site.list',
      '--approval',
      'none',
      '--json',
    ]);
    expect(ok.code).toBe(0);
    const printed = JSON.parse(ok.stdout.trim().split('\n').pop()!);
    expect(printed).toEqual({
      action_id: expect.stringMatching(/^agent_tool_execution:/),
      approval_id: null,
      action_hash: expect.any(String),
      objective_id: expect.any(String),
    });
    const item = await t.rest('GET', agentFeed(site.projectId, `/${encodeURIComponent(printed.action_id)}`), { key });
    expect(item.body.data.item).toMatchObject({
      status: 'succeeded',
      authorization: { outcome: 'automatic', basis: 'read_only_rule' },
    });
    const usage = await run(['agents', 'act', '--account', account, '--json']);
    expect(usage.code).toBe(2);
  });
});
