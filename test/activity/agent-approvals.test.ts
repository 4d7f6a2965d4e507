import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startTestPlatform, uniqueName, type TestPlatform } from '../support/platform';

// The machine is shared: runs and projections get minutes, not seconds, under heavy load.
jest.setTimeout(180_000);

/**
 * Assets approvals as agent actions (decision 0061, core/agent-actions.ts): a workflow run's
 * approval shows in the project's agent activity, and a decision on either route — the activity
 * route or the Assets route — settles both exactly once, through the real bridge and router.
 */
let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(async () => {
  await t.stop();
});

async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 90_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`condition not met: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

const flow = {
  trigger: { type: 'manual' },
  steps: [
    { id: 'review', type: 'wait_for_approval', config: { title: 'Check the file' } },
    { id: 'approved', type: 'tag', config: { add: ['reviewed'] } },
  ],
};

/** A key, a project (through a publishing site), an asset and an active workflow of that project. */
async function setUp() {
  const { key, account } = await t.createKey();
  const site = await t.rest('POST', '/api/v1/publisher/sites', { key, body: { name: 'Approvals' } });
  expect(site.status).toBe(202);
  const projectId = site.body.data.project.id as string;
  const fd = new FormData();
  fd.append('key', uniqueName('k'));
  fd.append('file', new Blob([Buffer.from('hello')]), 'a.txt');
  const up = await fetch(`${t.bridgeUrl}/api/v1/assets/upload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: fd,
  });
  expect(up.status).toBe(201);
  const assetId = ((await up.json()) as any).data.id as string;
  const wf = await t.rest('POST', '/api/v1/assets/workflows', {
    key,
    body: { name: 'review', project_id: projectId, draft: flow },
  });
  expect(wf.status).toBe(201);
  const id = wf.body.data.id as string;
  expect((await t.rest('POST', `/api/v1/assets/workflows/${id}/publish`, { key })).status).toBe(201);
  expect((await t.rest('POST', `/api/v1/assets/workflows/${id}/activate`, { key })).status).toBe(200);
  return { key, account, projectId, assetId, workflowId: id };
}

/** Starts a run and waits for its approval; returns the run and the pending agent action. */
async function waitingRun(s: Awaited<ReturnType<typeof setUp>>) {
  const r = await t.rest('POST', `/api/v1/assets/workflows/${s.workflowId}/run`, { key: s.key, body: { asset_id: s.assetId } });
  expect(r.status).toBe(202);
  const runId = r.body.data.id as string;
  const w = await until(
    () => t.rest('GET', `/api/v1/assets/workflows/runs/${runId}`, { key: s.key }),
    (x) => x.body.data.status === 'waiting_approval',
  );
  const approvalId = w.body.data.approval_id as string;
  const feed = await until(
    () => t.rest('GET', `/api/v1/projects/${s.projectId}/agent-activity`, { key: s.key }),
    (x) => x.status === 200 && x.body.data.pending.some((a: any) => a.approval?.id === approvalId),
  );
  const action = feed.body.data.pending.find((a: any) => a.approval.id === approvalId);
  return { runId, approvalId, action };
}

const activityDecide = (key: string, approvalId: string, body: unknown) =>
  t.rest('POST', `/api/v1/agents/approvals/${approvalId}/decision`, { key, body });
const assetsDecide = (key: string, approvalId: string, word: 'approve' | 'reject', body: unknown = {}) =>
  t.rest('POST', `/api/v1/assets/workflows/approvals/${approvalId}/${word}`, { key, body });
const runOf = (key: string, runId: string) => t.rest('GET', `/api/v1/assets/workflows/runs/${runId}`, { key });
const assetsApproval = async (key: string, approvalId: string) => {
  const all = await t.rest('GET', '/api/v1/assets/workflows/approvals?limit=100', { key });
  return all.body.data.items.find((a: any) => a.id === approvalId);
};
const exactAction = (key: string, projectId: string, actionId: string) =>
  t.rest('GET', `/api/v1/projects/${projectId}/agent-activity/${encodeURIComponent(actionId)}`, { key });

describe('Assets approvals as agent actions', () => {
  it('shows a waiting run in agent activity and an activity-route approval continues the run', async () => {
    const s = await setUp();
    const { runId, approvalId, action } = await waitingRun(s);
    expect(action).toMatchObject({
      action_key: 'assets.workflow.continue',
      status: 'pending_approval',
      continuation: { status: 'waiting_approvals' },
      agent: { type: 'assets' },
      principal: { type: 'workflow_run', id: runId },
      resource: { type: 'asset_workflow_run', id: runId },
      title: 'Check the file',
      impact: { risk: 'medium' },
      authorization: null,
      approval: {
        id: approvalId,
        status: 'pending',
        can_decide: true,
        decision_path: `/api/v1/agents/approvals/${approvalId}/decision`,
        scope: { level: 'project', project_id: s.projectId },
      },
    });
    expect(typeof action.summary).toBe('string');
    // The hash the Assets route offers is the one the activity route takes.
    const listed = await assetsApproval(s.key, approvalId);
    expect(action.approval.action_hash).toBe(listed.action_hash);

    expect((await activityDecide(s.key, approvalId, { decision: 'approved', action_hash: 'f'.repeat(64) })).status).toBe(409);
    const ok = await activityDecide(s.key, approvalId, { decision: 'approved', action_hash: listed.action_hash });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({
      id: approvalId,
      status: 'approved',
      continuation: { status: 'settled', action_status: 'succeeded' },
    });
    expect(ok.body.data.continuation.operations).toEqual([
      expect.objectContaining({ relation: 'originated', resource: { type: 'asset_workflow_run', id: runId } }),
    ]);

    // The run continues; the Assets approval records the same decision, once.
    await until(
      () => runOf(s.key, runId),
      (x) => x.body.data.status === 'succeeded',
    );
    expect(await assetsApproval(s.key, approvalId)).toMatchObject({ status: 'approved' });
    // Repeating on either route is answered again; the opposite decision conflicts on both.
    expect((await activityDecide(s.key, approvalId, { decision: 'approved', action_hash: listed.action_hash })).status).toBe(200);
    expect((await assetsDecide(s.key, approvalId, 'approve')).status).toBe(200);
    expect((await assetsDecide(s.key, approvalId, 'reject')).status).toBe(409);
    expect((await activityDecide(s.key, approvalId, { decision: 'denied', action_hash: listed.action_hash })).status).toBe(409);
    const exact = await exactAction(s.key, s.projectId, action.id);
    expect(exact.body.data.item).toMatchObject({
      status: 'succeeded',
      authorization: { outcome: 'human_approved', basis: 'human_decision' },
      approval: { status: 'approved', can_decide: false },
    });
    const run = await runOf(s.key, runId);
    expect(run.body.data.operations).toHaveLength(2);
  });

  it('an Assets-route rejection settles the agent action; the activity route then conflicts', async () => {
    const s = await setUp();
    const { runId, approvalId, action } = await waitingRun(s);
    const rej = await assetsDecide(s.key, approvalId, 'reject', { note: 'no' });
    expect(rej.status).toBe(200);
    expect(rej.body.data.status).toBe('rejected');
    expect((await runOf(s.key, runId)).body.data).toMatchObject({ status: 'failed', error_code: 'assets.approval_rejected' });
    const exact = await exactAction(s.key, s.projectId, action.id);
    expect(exact.body.data.item).toMatchObject({
      status: 'cancelled',
      authorization: null,
      approval: { status: 'denied', decision: 'denied', can_decide: false },
    });
    const hash = action.approval.action_hash;
    expect((await activityDecide(s.key, approvalId, { decision: 'approved', action_hash: hash })).status).toBe(409);
    // The same decision on the activity route is answered again.
    expect((await activityDecide(s.key, approvalId, { decision: 'denied', action_hash: hash })).status).toBe(200);
  });

  it('two opposite decisions at once, one on each route: exactly one wins and both records agree', async () => {
    const s = await setUp();
    for (let round = 0; round < 3; round++) {
      const { runId, approvalId, action } = await waitingRun(s);
      const hash = action.approval.action_hash;
      const [viaActivity, viaAssets] = await Promise.all([
        activityDecide(s.key, approvalId, { decision: 'approved', action_hash: hash }),
        assetsDecide(s.key, approvalId, 'reject'),
      ]);
      const statuses = [viaActivity.status, viaAssets.status].sort();
      expect(statuses).toEqual([200, 409]);
      const approvedWon = viaActivity.status === 200;
      const settled = await until(
        () => runOf(s.key, runId),
        (x) => x.body.data.status === (approvedWon ? 'succeeded' : 'failed'),
      );
      expect(settled.body.data.operations).toHaveLength(approvedWon ? 2 : 1);
      expect(await assetsApproval(s.key, approvalId)).toMatchObject({ status: approvedWon ? 'approved' : 'rejected' });
      const exact = await exactAction(s.key, s.projectId, action.id);
      expect(exact.body.data.item.approval.decision).toBe(approvedWon ? 'approved' : 'denied');
    }
  });

  it('a cancelled run withdraws the agent action; decisions on it conflict', async () => {
    const s = await setUp();
    const { runId, approvalId, action } = await waitingRun(s);
    expect((await t.rest('POST', `/api/v1/assets/workflows/runs/${runId}/cancel`, { key: s.key })).status).toBe(200);
    const exact = await exactAction(s.key, s.projectId, action.id);
    expect(exact.body.data.item).toMatchObject({ status: 'cancelled', approval: { status: 'cancelled', can_decide: false } });
    const d = await activityDecide(s.key, approvalId, { decision: 'approved', action_hash: action.approval.action_hash });
    expect(d.status).toBe(409);
    expect((await assetsDecide(s.key, approvalId, 'approve')).status).toBe(409);
  });

  it('an MCP write-tool call is an account-wide agent action; approving it on the activity route performs the tool', async () => {
    const s = await setUp();
    const client = new Client({ name: 'test-agent', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${t.bridgeUrl}/api/v1/assets/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${s.key}` } },
      }),
    );
    let approvalId: string;
    try {
      const asked = await client.callTool({ name: 'tag', arguments: { asset_id: s.assetId, add: ['agent-tagged'] } });
      expect(asked.structuredContent).toMatchObject({ status: 'approval_required', action_key: 'assets.tag' });
      approvalId = (asked.structuredContent as any).approval_id;
    } finally {
      await client.close();
    }
    // Account-wide: listed in the feed of a project of the account.
    const feed = await t.rest('GET', `/api/v1/projects/${s.projectId}/agent-activity`, { key: s.key });
    const action = feed.body.data.pending.find((a: any) => a.approval.id === approvalId);
    expect(action).toMatchObject({
      action_key: 'assets.tag',
      status: 'pending_approval',
      principal: { type: 'api_key' },
      project: null,
      // The key that asked is never offered the decision (spec 5.5).
      approval: { scope: { level: 'account', project_id: null }, can_decide: false },
    });
    expect(action.summary).toContain('tag');
    const self = await activityDecide(s.key, approvalId, { decision: 'approved', action_hash: action.approval.action_hash });
    expect(self.status).toBe(403);
    expect(self.body.error.code).toBe('approval_self_decision');
    // A member key of the account is not an owner: not offered, refused.
    const member = await t.createKey({ account: s.account, role: 'member' });
    const asMember = await t.rest('GET', `/api/v1/projects/${s.projectId}/agent-activity`, { key: member.key });
    expect(asMember.body.data.pending.find((a: any) => a.approval.id === approvalId).approval.can_decide).toBe(false);
    const byMember = await activityDecide(member.key, approvalId, {
      decision: 'approved',
      action_hash: action.approval.action_hash,
    });
    expect(byMember.status).toBe(403);
    expect(byMember.body.error.code).toBe('approval_not_permitted');
    // Another owner key of the account is offered it and decides.
    const second = await t.createKey({ account: s.account });
    const asSecond = await t.rest('GET', `/api/v1/projects/${s.projectId}/agent-activity`, { key: second.key });
    expect(asSecond.body.data.pending.find((a: any) => a.approval.id === approvalId).approval.can_decide).toBe(true);
    // Another account's key sees no such approval.
    const other = await t.createKey();
    expect(
      (await activityDecide(other.key, approvalId, { decision: 'approved', action_hash: action.approval.action_hash })).status,
    ).toBe(404);
    const ok = await activityDecide(second.key, approvalId, { decision: 'approved', action_hash: action.approval.action_hash });
    expect(ok.status).toBe(200);
    expect(ok.body.data.continuation).toMatchObject({ status: 'settled', action_status: 'succeeded' });
    expect(ok.body.data.continuation.operations[0]).toMatchObject({
      relation: 'originated',
      resource: { type: 'asset_automation_action', id: approvalId },
    });
    await until(
      () => t.rest('GET', `/api/v1/assets/${s.assetId}`, { key: s.key }),
      (x) => (x.body.data.tags ?? []).includes('agent-tagged'),
    );
    expect(await assetsApproval(s.key, approvalId)).toMatchObject({ status: 'approved' });
  });

  it('shows tasks, related resources and per-source health; a failing source makes availability incomplete', async () => {
    const { key } = await t.createKey();
    const siteOf = async () => {
      const site = await t.rest('POST', '/api/v1/publisher/sites', { key, body: { name: 'Health' } });
      expect(site.status).toBe(202);
      return { projectId: site.body.data.project.id as string, opId: site.body.data.operation.id as string };
    };
    const completedIn = async (projectId: string, opId: string) =>
      until(
        () => t.rest('GET', `/api/v1/projects/${projectId}/operation-activity`, { key }),
        (x) => x.status === 200 && x.body.data.history.items.some((i: any) => i.id === `operation:${opId}`),
      );
    const a = await siteOf();
    const read = await completedIn(a.projectId, a.opId);
    const item = read.body.data.history.items.find((i: any) => i.id === `operation:${a.opId}`);
    expect(item.related_resources).toEqual([{ type: 'project', id: a.projectId, relation: 'belongs_to' }]);
    expect(item.tasks.length).toBeGreaterThan(0);
    for (const task of item.tasks) {
      expect(task).toEqual({
        id: `operation:${a.opId}/${task.name}`,
        name: expect.any(String),
        status: 'completed',
        started_at: expect.any(String),
        updated_at: expect.any(String),
      });
    }
    const op = read.body.data.availability.sources.find((x: any) => x.source_kind === 'operation');
    expect(op).toMatchObject({ role: 'operations', state: 'available', health: { status: 'ok', last_error: null } });
    expect(typeof op.health.last_event_at).toBe('string');
    expect(op.health.lag_ms).toEqual(expect.any(Number));
    expect(read.body.data.availability.complete).toBe(true);

    // An event the projection cannot apply: the source shows failing, by kind only, until the next one applies.
    const activity = (t.platform.services as any).activity;
    const broken = { sourceKind: 'operation', topic: 'operations', map: () => ({ id: 'elsewhere:1' }) };
    await expect(activity.consume(broken, {})).rejects.toThrow();
    const failing = await t.rest('GET', `/api/v1/projects/${a.projectId}/operation-activity`, { key });
    const fop = failing.body.data.availability.sources.find((x: any) => x.source_kind === 'operation');
    expect(fop).toMatchObject({ state: 'available', health: { status: 'failing', last_error: { code: 'invalid_event' } } });
    expect(failing.body.data.availability.complete).toBe(false);
    const b = await siteOf();
    await completedIn(b.projectId, b.opId);
    const healed = await until(
      () => t.rest('GET', `/api/v1/projects/${b.projectId}/operation-activity`, { key }),
      (x) => x.body.data.availability.sources.find((s: any) => s.source_kind === 'operation').health.status === 'ok',
    );
    expect(healed.body.data.availability.complete).toBe(true);
  });

  it('a decision recorded on the action whose performer never ran (a crash) is re-driven by the sweep', async () => {
    const s = await setUp();
    const { runId, approvalId, action } = await waitingRun(s);
    const activity = (t.platform.services as any).activity;
    // What a crash right after the arbiter's write leaves: the action approved, Assets still pending.
    const now = new Date(Date.now() - 60_000);
    await activity.models.Action.updateOne(
      { _id: action.source.record_id },
      {
        $set: {
          'approval.status': 'approved',
          'approval.decision': 'approved',
          'approval.decidedAt': now,
          status: 'queued',
          continuation: 'queued',
          updatedAt: now,
        },
      },
    );
    expect(await assetsApproval(s.key, approvalId)).toMatchObject({ status: 'pending' });
    expect(await activity.actions.redriveContinuations(30_000)).toBeGreaterThanOrEqual(1);
    await until(
      () => runOf(s.key, runId),
      (x) => x.body.data.status === 'succeeded',
    );
    expect(await assetsApproval(s.key, approvalId)).toMatchObject({ status: 'approved' });
    const exact = await exactAction(s.key, s.projectId, action.id);
    expect(exact.body.data.item).toMatchObject({ status: 'succeeded', continuation: { status: 'settled' } });
  });
});
