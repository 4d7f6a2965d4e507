import { Webhook } from 'standardwebhooks';
import { startTestPlatform, uniqueName, type TestPlatform } from '../support/platform';
import { PNG } from './harness';

/** Workflows with approvals and workflow hooks (decision 0027), through the real bridge. */
describe('assets workflows', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startTestPlatform();
  });
  afterAll(async () => {
    await t.stop();
  });

  const upload = async (key: string, name = 'a.txt') => {
    const fd = new FormData();
    fd.append('key', uniqueName('k'));
    fd.append('file', new Blob([Buffer.from(`hello ${name}`)]), name);
    const res = await fetch(`${t.bridgeUrl}/api/v1/assets/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    });
    const body = (await res.json()) as any;
    expect(res.status).toBe(201);
    return body.data as { id: string; revision: number };
  };

  const until = async <T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 15_000): Promise<T> => {
    const end = Date.now() + ms;
    for (;;) {
      const v = await read();
      if (ok(v)) return v;
      if (Date.now() > end) throw new Error(`condition not met: ${JSON.stringify(v)}`);
      await new Promise((r) => setTimeout(r, 150));
    }
  };
  const run = (key: string, id: string) => t.rest('GET', `/api/v1/assets/workflows/runs/${id}`, { key });

  const approvalFlow = {
    trigger: { type: 'manual' },
    steps: [
      { id: 'label', type: 'tag', config: { add: ['incoming'] } },
      { id: 'review', type: 'wait_for_approval', config: { title: 'Check the file' } },
      { id: 'approved', type: 'tag', config: { add: ['reviewed'], remove: ['incoming'] } },
      { id: 'tell', type: 'notify', config: { message: 'reviewed' } },
    ],
  };

  const published = async (key: string, draft: unknown = approvalFlow) => {
    const created = await t.rest('POST', '/api/v1/assets/workflows', { key, body: { name: 'review', draft } });
    expect(created.status).toBe(201);
    const id = created.body.data.id as string;
    expect((await t.rest('POST', `/api/v1/assets/workflows/${id}/publish`, { key })).status).toBe(201);
    const act = await t.rest('POST', `/api/v1/assets/workflows/${id}/activate`, { key });
    expect(act.status).toBe(200);
    return { id, activated: act.body.data };
  };

  it('serves the catalog and refuses callers without a key', async () => {
    const { key } = await t.createKey();
    const cat = await t.rest('GET', '/api/v1/assets/workflows/catalog', { key });
    expect(cat.status).toBe(200);
    expect(cat.body.data.steps.map((s: any) => s.type)).toEqual(['transform', 'tag', 'move', 'notify', 'wait_for_approval']);
    expect(cat.body.data.triggers).toEqual([{ type: 'manual' }, { type: 'hook' }]);
    expect((await t.rest('GET', '/api/v1/assets/workflows/catalog')).status).toBe(401);
    expect((await t.rest('GET', '/api/v1/assets/workflows')).status).toBe(401);
  });

  it('creates, guards the draft by revision, validates, publishes immutable versions and lists', async () => {
    const { key } = await t.createKey();
    const created = await t.rest('POST', '/api/v1/assets/workflows', { key, body: { name: 'flow' } });
    expect(created.status).toBe(201);
    expect(created.headers.get('etag')).toBe('"1"');
    const wf = created.body.data;
    expect(wf).toMatchObject({
      name: 'flow',
      status: 'draft',
      revision: 1,
      latest_version: 0,
      active_version: null,
      hook_url: null,
    });
    const path = `/api/v1/assets/workflows/${wf.id}`;

    // An empty draft does not validate and cannot be published.
    const empty = await t.rest('POST', `${path}/validate`, { key });
    expect(empty.status).toBe(200);
    expect(empty.body.data.valid).toBe(false);
    expect((await t.rest('POST', `${path}/publish`, { key })).status).toBe(400);
    expect((await t.rest('POST', `${path}/activate`, { key })).status).toBe(409);
    expect((await t.rest('POST', `${path}/run`, { key, body: {} })).status).toBe(409);

    // Draft: 428 without If-Match, 412 stale, 400 malformed, 200 with the revision.
    const bad = { trigger: { type: 'manual' }, steps: [{ id: 'x', type: 'explode', config: {} }] };
    expect((await t.rest('PUT', `${path}/draft`, { key, body: bad })).status).toBe(428);
    expect((await t.rest('PUT', `${path}/draft`, { key, body: bad, headers: { 'if-match': '"7"' } })).status).toBe(412);
    expect((await t.rest('PUT', `${path}/draft`, { key, body: { steps: [] }, headers: { 'if-match': '"1"' } })).status).toBe(400);
    const saved = await t.rest('PUT', `${path}/draft`, { key, body: bad, headers: { 'if-match': '"1"' } });
    expect(saved.status).toBe(200);
    expect(saved.headers.get('etag')).toBe('"2"');
    const findings = await t.rest('POST', `${path}/validate`, { key });
    expect(findings.body.data).toEqual({
      valid: false,
      errors: [{ path: 'steps[0].type', message: 'unknown step type explode; see GET /workflows/catalog' }],
    });
    const good = { trigger: { type: 'manual' }, steps: [{ id: 'x', type: 'tag', config: { add: ['a'] } }] };
    expect((await t.rest('PUT', `${path}/draft`, { key, body: good, headers: { 'if-match': '"2"' } })).status).toBe(200);
    expect((await t.rest('POST', `${path}/validate`, { key })).body.data).toEqual({ valid: true, errors: [] });

    const v1 = await t.rest('POST', `${path}/publish`, { key });
    expect(v1.status).toBe(201);
    expect(v1.body.data).toMatchObject({ workflow_id: wf.id, version: 1 });
    expect(v1.body.data.definition.steps[0]).toEqual({ id: 'x', type: 'tag', config: { add: ['a'], remove: [] } });
    // Changing the draft afterwards leaves version 1 as it was.
    const other = { trigger: { type: 'manual' }, steps: [{ id: 'y', type: 'notify', config: { message: 'hi' } }] };
    expect((await t.rest('PUT', `${path}/draft`, { key, body: other, headers: { 'if-match': '"3"' } })).status).toBe(200);
    expect((await t.rest('POST', `${path}/publish`, { key })).status).toBe(201);
    // Two publishes at once get two numbers.
    const both = await Promise.all([t.rest('POST', `${path}/publish`, { key }), t.rest('POST', `${path}/publish`, { key })]);
    expect(both.map((r) => r.body.data.version).sort()).toEqual([3, 4]);
    const versions = await t.rest('GET', `${path}/versions`, { key });
    expect(versions.status).toBe(200);
    expect(versions.body.data.items.map((v: any) => [v.version, v.definition.steps[0].id])).toEqual([
      [4, 'y'],
      [3, 'y'],
      [2, 'y'],
      [1, 'x'],
    ]);

    const list = await t.rest('GET', '/api/v1/assets/workflows?limit=1', { key });
    expect(list.status).toBe(200);
    expect(list.body.data.items).toHaveLength(1);
    expect((await t.rest('GET', '/api/v1/assets/workflows?limit=0', { key })).status).toBe(400);
    expect((await t.rest('GET', `${path}`, { key })).body.data.latest_version).toBe(4);

    // Not visible to another account; read-only keys cannot change anything.
    const stranger = await t.createKey();
    expect((await t.rest('GET', path, { key: stranger.key })).status).toBe(404);
    expect((await t.rest('GET', '/api/v1/assets/workflows/runs/00000000-0000-4000-8000-000000000000', { key })).status).toBe(404);
    const reader = await t.createKey({ role: 'read_only' });
    expect((await t.rest('POST', '/api/v1/assets/workflows', { key: reader.key, body: { name: 'x' } })).status).toBe(403);
    expect((await t.rest('POST', '/api/v1/assets/workflows', { key, body: { name: 'x', extra: 1 } })).status).toBe(400);
  });

  it('runs as durable operations, waits for an approval and continues after it', async () => {
    const { key } = await t.createKey();
    const asset = await upload(key);
    const { id } = await published(key);
    expect((await t.rest('POST', `/api/v1/assets/workflows/${id}/run`, { key, body: {} })).status).toBe(400);
    expect(
      (
        await t.rest('POST', `/api/v1/assets/workflows/${id}/run`, {
          key,
          body: { asset_id: '00000000-0000-4000-8000-000000000000' },
        })
      ).status,
    ).toBe(404);
    const started = await t.rest('POST', `/api/v1/assets/workflows/${id}/run`, { key, body: { asset_id: asset.id } });
    expect(started.status).toBe(202);
    const runId = started.body.data.id as string;
    expect(started.body.data).toMatchObject({
      job_id: runId,
      status: 'queued',
      status_url: `/api/v1/assets/jobs/${runId}`,
    });

    const waiting = await until(
      () => run(key, runId),
      (r) => r.body.data.status === 'waiting_approval',
    );
    expect(waiting.body.data.current_step).toBe('review');
    expect(waiting.body.data.steps.map((s: any) => s.status)).toEqual(['succeeded', 'waiting', 'pending', 'pending']);
    expect((await t.rest('GET', `/api/v1/assets/${asset.id}`, { key })).body.data.tags).toEqual(['incoming']);

    const approvals = await t.rest('GET', '/api/v1/assets/workflows/approvals?status=pending', { key });
    expect(approvals.status).toBe(200);
    const approval = approvals.body.data.items.find((a: any) => a.run_id === runId);
    expect(approval).toMatchObject({
      kind: 'workflow_step',
      action_key: 'assets.workflow.continue',
      status: 'pending',
      step_id: 'review',
      title: 'Check the file',
      can_decide: true,
      decision_path: `/api/v1/assets/workflows/approvals/${approval.id}/decision`,
    });
    expect((await t.rest('GET', '/api/v1/assets/workflows/approvals?status=nope', { key })).status).toBe(400);
    const decide = (word: string, body: unknown = {}, k = key) =>
      t.rest('POST', `/api/v1/assets/workflows/approvals/${approval.id}/${word}`, { key: k, body });
    expect((await decide('approve', { action_hash: 'f'.repeat(64) })).status).toBe(409);
    // A read-only key may not decide (403); another account's key does not see the approval (404).
    const owner = await t.createKey();
    const reader = await t.createKey({ role: 'read_only', account: owner.account });
    expect((await decide('approve', {}, reader.key)).status).toBe(403);
    expect((await decide('approve', {}, owner.key)).status).toBe(404);

    const approved = await decide('approve', { action_hash: approval.action_hash, note: 'fine' });
    expect(approved.status).toBe(200);
    expect(approved.body.data).toMatchObject({ status: 'approved', note: 'fine', can_decide: false });
    // The same decision again is answered again; the opposite one conflicts.
    expect((await decide('approve')).status).toBe(200);
    expect((await decide('reject')).status).toBe(409);

    const done = await until(
      () => run(key, runId),
      (r) => r.body.data.status === 'succeeded',
    );
    expect(done.body.data.steps.map((s: any) => s.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    expect((await t.rest('GET', `/api/v1/assets/${asset.id}`, { key })).body.data.tags).toEqual(['reviewed']);
    // Two segments, each a durable operation of the kernel engine.
    expect(done.body.data.operations).toHaveLength(2);
    const ops = await Promise.all(done.body.data.operations.map((o: string) => t.platform.engine.get(o)));
    expect(ops.map((o) => [o?.operationType, o?.status, o?.resourceId])).toEqual([
      ['assets.workflow_run', 'completed', runId],
      ['assets.workflow_run', 'completed', runId],
    ]);
    const runs = await t.rest('GET', `/api/v1/assets/workflows/${id}/runs`, { key });
    expect(runs.body.data.items.map((r: any) => r.id)).toEqual([runId]);
    // A finished run cannot be cancelled or retried.
    expect((await t.rest('POST', `/api/v1/assets/workflows/runs/${runId}/cancel`, { key })).status).toBe(409);
    expect((await t.rest('POST', `/api/v1/assets/workflows/runs/${runId}/retry`, { key })).status).toBe(409);
  });

  it('fails a rejected run, cancels a waiting one, retries it, and refuses a decision after expiry', async () => {
    const { key } = await t.createKey();
    const asset = await upload(key);
    const { id } = await published(key);
    const start = async () => {
      const r = await t.rest('POST', `/api/v1/assets/workflows/${id}/run`, { key, body: { asset_id: asset.id } });
      const runId = r.body.data.id as string;
      const w = await until(
        () => run(key, runId),
        (x) => x.body.data.status === 'waiting_approval',
      );
      return { runId, approvalId: w.body.data.approval_id as string };
    };

    const rejected = await start();
    const rej = await t.rest('POST', `/api/v1/assets/workflows/approvals/${rejected.approvalId}/reject`, { key, body: {} });
    expect(rej.status).toBe(200);
    expect(rej.body.data.status).toBe('rejected');
    expect((await run(key, rejected.runId)).body.data).toMatchObject({
      status: 'failed',
      error_code: 'assets.approval_rejected',
    });

    const cancelled = await start();
    const c = await t.rest('POST', `/api/v1/assets/workflows/runs/${cancelled.runId}/cancel`, { key });
    expect(c.status).toBe(200);
    expect(c.body.data.status).toBe('cancelled');
    expect((await t.rest('POST', `/api/v1/assets/workflows/approvals/${cancelled.approvalId}/approve`, { key })).status).toBe(
      409,
    );
    // Retry resumes at the approval step: a new approval is asked for.
    const retried = await t.rest('POST', `/api/v1/assets/workflows/runs/${cancelled.runId}/retry`, { key });
    expect(retried.status).toBe(202);
    const again = await until(
      () => run(key, cancelled.runId),
      (x) => x.body.data.status === 'waiting_approval',
    );
    expect(again.body.data.approval_id).not.toBe(cancelled.approvalId);

    // An approval past its expiry: 410, and the run fails.
    const svc = (t.platform.services as any).assets.workflows;
    await svc.d.models.Approval.updateOne(
      { _id: again.body.data.approval_id },
      { $set: { expiresAt: new Date(Date.now() - 1000) } },
    );
    const late = await t.rest('POST', `/api/v1/assets/workflows/approvals/${again.body.data.approval_id}/approve`, { key });
    expect(late.status).toBe(410);
    expect((await run(key, cancelled.runId)).body.data).toMatchObject({
      status: 'failed',
      error_code: 'assets.approval_expired',
    });

    // The sweep expires a forgotten approval and fails its run without anyone deciding.
    const forgotten = await start();
    await svc.d.models.Approval.updateOne({ _id: forgotten.approvalId }, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    expect(await svc.sweepExpired()).toBeGreaterThanOrEqual(1);
    expect((await run(key, forgotten.runId)).body.data.status).toBe('failed');
    const listed = await t.rest('GET', '/api/v1/assets/workflows/approvals?status=expired', { key });
    expect(listed.body.data.items.map((a: any) => a.id)).toContain(forgotten.approvalId);
    expect(
      (await t.rest('POST', '/api/v1/assets/workflows/approvals/00000000-0000-4000-8000-000000000000/approve', { key })).status,
    ).toBe(404);
  });

  it('runs transform and move steps, fails a run at a failing step and retries it from there', async () => {
    const { key } = await t.createKey();
    const fd = new FormData();
    fd.append('key', uniqueName('img'));
    fd.append('file', new Blob([PNG]), 'dot.png');
    const up = await fetch(`${t.bridgeUrl}/api/v1/assets/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    });
    const image = ((await up.json()) as any).data;
    await until(
      () => t.rest('GET', `/api/v1/assets/${image.id}`, { key }),
      (r) => r.body.data.status === 'ready',
    );
    const tr = await t.rest('POST', '/api/v1/assets/transformations', { key, body: { name: 'tiny', width: 1, format: 'webp' } });
    expect(tr.status).toBe(201);
    const bucket = await t.rest('POST', '/api/v1/assets/buckets', { key, body: { name: uniqueName('archive') } });
    expect(bucket.status).toBe(201);
    const { id } = await published(key, {
      trigger: { type: 'manual' },
      steps: [
        { id: 'shrink', type: 'transform', config: { transformation: 'tiny' } },
        { id: 'file', type: 'move', config: { bucket: 'no-such-bucket' } },
      ],
    });
    const started = await t.rest('POST', `/api/v1/assets/workflows/${id}/run`, { key, body: { asset_id: image.id } });
    const failed = await until(
      () => run(key, started.body.data.id),
      (r) => r.body.data.status === 'failed',
    );
    expect(failed.body.data.steps.map((s: any) => [s.id, s.status])).toEqual([
      ['shrink', 'succeeded'],
      ['file', 'failed'],
    ]);
    expect(failed.body.data.steps[0].result).toMatchObject({ asset_id: image.id, format: 'webp', width: 1 });
    expect(failed.body.data.error_code).toEqual(expect.stringMatching(/not_found/));
    const derivatives = await t.rest('GET', `/api/v1/assets/${image.id}/derivatives`, { key });
    expect(derivatives.body.data).toHaveLength(1);

    // Retry resumes at the failed step (the transform is not run again): still failing here.
    const retried = await t.rest('POST', `/api/v1/assets/workflows/runs/${started.body.data.id}/retry`, { key });
    expect(retried.status).toBe(202);
    expect(retried.body.data.steps.map((s: any) => s.status)).toEqual(['succeeded', 'pending']);
    const again = await until(
      () => run(key, started.body.data.id),
      (r) => r.body.data.status === 'failed',
    );
    expect(again.body.data.operations).toHaveLength(2);

    // A workflow whose move names a real bucket moves the asset.
    const mover = await published(key, {
      trigger: { type: 'manual' },
      steps: [{ id: 'file', type: 'move', config: { bucket: bucket.body.data.id } }],
    });
    const moved = await t.rest('POST', `/api/v1/assets/workflows/${mover.id}/run`, { key, body: { asset_id: image.id } });
    await until(
      () => run(key, moved.body.data.id),
      (r) => r.body.data.status === 'succeeded',
    );
    expect((await t.rest('GET', `/api/v1/assets/${image.id}`, { key })).body.data.bucket).toBe(bucket.body.data.id);
  });

  it('shows the run segments and the approval in the project operation activity', async () => {
    const { key, accountId } = await t.createKey();
    const project = await t.platform.ports.get('projects').createProject(accountId, uniqueName('proj'));
    const asset = await upload(key);
    const created = await t.rest('POST', '/api/v1/assets/workflows', {
      key,
      body: { name: 'in-project', project_id: project.id, draft: approvalFlow },
    });
    expect(created.status).toBe(201);
    expect(created.body.data.project_id).toBe(project.id);
    const other = await t.createKey();
    const foreign = await t.platform.ports.get('projects').createProject(other.accountId, 'theirs');
    expect((await t.rest('POST', '/api/v1/assets/workflows', { key, body: { name: 'x', project_id: foreign.id } })).status).toBe(
      404,
    );
    const id = created.body.data.id;
    await t.rest('POST', `/api/v1/assets/workflows/${id}/publish`, { key });
    await t.rest('POST', `/api/v1/assets/workflows/${id}/activate`, { key });
    const runId = (await t.rest('POST', `/api/v1/assets/workflows/${id}/run`, { key, body: { asset_id: asset.id } })).body.data
      .id;
    const waiting = await until(
      () => run(key, runId),
      (r) => r.body.data.status === 'waiting_approval',
    );
    const approvalId = waiting.body.data.approval_id;
    const feed = () => t.rest('GET', `/api/v1/projects/${project.id}/operation-activity?limit=100`, { key });
    const all = (r: any) => [...r.body.data.current, ...r.body.data.history.items];
    const pending = await until(feed, (r) => all(r).some((i: any) => i.id === `asset_approval:${approvalId}`), 60_000);
    expect(all(pending).find((i: any) => i.id === `asset_approval:${approvalId}`)).toMatchObject({ status: 'waiting' });
    expect(all(pending).some((i: any) => i.id === `operation:${waiting.body.data.operations[0]}`)).toBe(true);
    await t.rest('POST', `/api/v1/assets/workflows/approvals/${approvalId}/approve`, { key, body: {} });
    const decided = await until(
      feed,
      (r) => all(r).some((i: any) => i.id === `asset_approval:${approvalId}` && i.status === 'completed'),
      60_000,
    );
    expect(decided.status).toBe(200);
  });

  it('starts runs from a signed workflow hook and refuses bad signatures, stale timestamps and replays', async () => {
    const { key } = await t.createKey();
    const asset = await upload(key);
    const { activated } = await published(key, {
      trigger: { type: 'hook' },
      steps: [{ id: 'mark', type: 'tag', config: { add: ['hooked'] } }],
    });
    expect(activated.hook_url).toMatch(/\/api\/v1\/assets\/workflow-hooks\/[A-Za-z0-9_-]+$/);
    expect(activated.hook_secret).toMatch(/^whsec_/);
    const again = await t.rest('POST', `/api/v1/assets/workflows/${activated.id}/activate`, { key });
    expect(again.body.data.hook_secret).toBeNull();
    expect(again.body.data.hook_url).toBe(activated.hook_url);

    const path = new URL(activated.hook_url).pathname;
    const wh = new Webhook(activated.hook_secret);
    const send = (body: string, id: string, at = new Date(), sig?: string, p = path) =>
      t.rest('POST', p, {
        rawBody: body,
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': sig ?? wh.sign(id, at, body),
        },
      });
    const body = JSON.stringify({ asset_id: asset.id });
    const ok = await send(body, 'msg_1');
    expect(ok.status).toBe(202);
    const runId = ok.body.data.run_id;
    const done = await until(
      () => run(key, runId),
      (r) => r.body.data.status === 'succeeded',
    );
    expect(done.body.data.trigger).toEqual({ type: 'hook', key_id: null, delivery_id: 'msg_1' });
    expect((await t.rest('GET', `/api/v1/assets/${asset.id}`, { key })).body.data.tags).toEqual(['hooked']);

    expect((await send(body, 'msg_1')).status).toBe(409);
    const stale = new Date(Date.now() - 10 * 60_000);
    const old = await send(body, 'msg_2', stale);
    expect(old.status).toBe(401);
    expect(old.body.error.code).toBe('assets.hook_timestamp_out_of_tolerance');
    const forged = await send(body, 'msg_3', new Date(), wh.sign('msg_3', new Date(), '{"asset_id":"other"}'));
    expect(forged.status).toBe(401);
    expect(forged.body.error.code).toBe('assets.hook_signature_invalid');
    expect((await t.rest('POST', path, { rawBody: body, headers: { 'content-type': 'application/json' } })).status).toBe(401);
    expect((await send(body, 'msg_4', new Date(), undefined, '/api/v1/assets/workflow-hooks/nosuchtokenxxxxxxxxxx')).status).toBe(
      404,
    );
    expect((await send('[1]', 'msg_5')).status).toBe(400);
  });

  // Last in the file: it pauses the shared platform's engine.
  it('fails a run whose segment operation the engine gave up on, instead of leaving it running', async () => {
    const { key } = await t.createKey();
    const asset = await upload(key);
    const { id } = await published(key, {
      trigger: { type: 'manual' },
      steps: [{ id: 'label', type: 'tag', config: { add: ['x'] } }],
    });
    const engine = t.platform.engine;
    engine.halt(); // nobody claims the segment while its workers are made to look dead
    try {
      const started = await t.rest('POST', `/api/v1/assets/workflows/${id}/run`, { key, body: { asset_id: asset.id } });
      expect(started.status).toBe(202);
      const [opId] = started.body.data.operations as string[];
      // As after every worker that claimed it died mid-run: running, its lease lapsed, no attempts left.
      const past = new Date(Date.now() - 60_000);
      const res = await engine.model.updateOne(
        { _id: opId },
        { $set: { status: 'running', attempt: 99, 'lease.owner': 'dead-worker', 'lease.until': past } },
      );
      expect(res.modifiedCount).toBe(1);
    } finally {
      engine.start();
    }
    const failed = await until(
      () => t.rest('GET', `/api/v1/assets/workflows/${id}/runs`, { key }),
      (r) => r.body.data?.items?.[0]?.status === 'failed',
      30_000,
    );
    expect(failed.body.data.items[0].error_code).toBe('operation_abandoned');
    expect(failed.body.data.items[0].steps.map((s: any) => [s.id, s.status])).toEqual([['label', 'failed']]);
    expect((await t.rest('GET', `/api/v1/assets/${asset.id}`, { key })).body.data.tags).toEqual([]);
  });
});
