import { startTestPlatform, type TestPlatform } from '../support/platform';
import { ISO, UUID, errorBody, failNext, projectPath, runningSite, waitForOperation } from './support';

let t: TestPlatform;

beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(async () => {
  await t.stop();
});

const capture = {
  status: 'captured',
  snapshot_id: expect.any(String),
  size_bytes: expect.any(Number),
  sha256: null,
  captured_at: expect.stringMatching(ISO),
};

async function takePoint(key: string, projectId: string, body: Record<string, unknown> = {}) {
  const res = await t.rest('POST', projectPath(projectId, '/recovery-points'), { key, body });
  expect(res.status).toBe(202);
  const op = await waitForOperation(t, key, projectId, res.body.data.operation.id);
  return { res, op };
}

describe('recovery points', () => {
  it('captures database, content and the exact release into one completed point (202, then completed)', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key, { runtime_version: '5.126.0' });
    const { res, op } = await takePoint(key, projectId, { reason: 'before theme change' });
    expect(res.body.data).toEqual({
      recovery_point: {
        id: expect.stringMatching(UUID),
        project_id: projectId,
        kind: 'manual',
        reason: 'before theme change',
        status: 'pending',
        runtime_version: '5.126.0',
        runtime_digest: expect.stringMatching(/^sha512-[A-Za-z0-9+/]{86}==$/),
        runtime_image: expect.any(String),
        database: { status: 'pending', snapshot_id: null, size_bytes: null, sha256: null, captured_at: null },
        content: { status: 'pending', snapshot_id: null, size_bytes: null, sha256: null, captured_at: null },
        release: { status: 'pending', snapshot_id: null, size_bytes: null, sha256: null, captured_at: null },
        operation_id: res.body.data.operation.id,
        error_code: null,
        created_at: expect.stringMatching(ISO),
        completed_at: null,
      },
      operation: expect.objectContaining({
        operation_type: 'recovery_point',
        resource_type: 'site',
        status: 'pending',
        step: 'queued',
      }),
    });
    expect(op).toMatchObject({
      status: 'completed',
      result: { recovery_point_id: res.body.data.recovery_point.id, recovery_point_status: 'completed' },
    });
    expect(op.steps.map((s: any) => s.id)).toEqual([
      'capture_database',
      'capture_content',
      'capture_release',
      'seal_recovery_point',
    ]);

    const list = await t.rest('GET', projectPath(projectId, '/recovery-points'), { key });
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([
      expect.objectContaining({
        id: res.body.data.recovery_point.id,
        status: 'completed',
        database: capture,
        content: capture,
        release: {
          status: 'captured',
          snapshot_id: res.body.data.recovery_point.runtime_digest,
          size_bytes: null,
          sha256: null,
          captured_at: expect.stringMatching(ISO),
        },
        completed_at: expect.stringMatching(ISO),
      }),
    ]);
  });

  it('lists points newest first; an empty body and a stopped site are fine; bad bodies are 400', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key);
    expect((await t.rest('GET', projectPath(projectId, '/recovery-points'), { key })).body.data).toEqual([]);
    const first = await takePoint(key, projectId);
    const stop = await t.rest('POST', projectPath(projectId, '/actions'), { key, body: { action: 'stop' } });
    await waitForOperation(t, key, projectId, stop.body.data.operation.id);
    const second = await takePoint(key, projectId, { reason: 'stopped' });
    const list = await t.rest('GET', projectPath(projectId, '/recovery-points'), { key });
    expect(list.body.data.map((p: any) => p.id)).toEqual([
      second.res.body.data.recovery_point.id,
      first.res.body.data.recovery_point.id,
    ]);
    expect(list.body.data[1].reason).toBeNull();

    const tooLong = await t.rest('POST', projectPath(projectId, '/recovery-points'), { key, body: { reason: 'x'.repeat(501) } });
    expect([tooLong.status, tooLong.body.error.code]).toEqual([400, 'invalid_request']);
    const unknownField = await t.rest('POST', projectPath(projectId, '/recovery-points'), { key, body: { why: 'x' } });
    expect(unknownField.status).toBe(400);
  });

  it('leaves an incomplete point when the content capture fails, fails the operation, and refuses to restore it (400)', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key);
    failNext(t, projectId, 'recovery_point', 'capture_content');
    const { res, op } = await takePoint(key, projectId, { reason: 'doomed' });
    expect(op).toMatchObject({ status: 'failed', error_code: 'infrastructure_failure', error_message: expect.any(String) });
    expect(op.steps.map((s: any) => [s.id, s.status])).toEqual([
      ['capture_database', 'completed'],
      ['capture_content', 'failed'],
    ]);
    const [point] = (await t.rest('GET', projectPath(projectId, '/recovery-points'), { key })).body.data;
    expect(point).toMatchObject({
      id: res.body.data.recovery_point.id,
      status: 'incomplete',
      error_code: 'infrastructure_failure',
      database: capture,
      content: { status: 'failed', snapshot_id: null },
      release: { status: 'skipped' },
      completed_at: null,
    });
    const restore = await t.rest('POST', projectPath(projectId, `/recovery-points/${point.id}/restore`), { key });
    expect(restore.status).toBe(400);
    expect(restore.body).toEqual(errorBody('recovery_point_incomplete'));
    expect(restore.body.error.details).toEqual({ recovery_point_id: point.id, status: 'incomplete' });
    // The site is unharmed and free for the next operation.
    const meta = await t.rest('GET', projectPath(projectId, '/metadata'), { key });
    expect(meta.body.data).toMatchObject({ installation: { status: 'running' }, active_operation: null });
  });

  it('refuses to take a point of a site that never provisioned (409 invalid_site_state)', async () => {
    const { key } = await t.createKey();
    const name = `Broken ${Date.now()}`;
    t.platform.services.publisher.simulated.injectFailure({
      operationType: 'provision',
      step: 'allocate_database',
      match: (op) => (op.input as any).name === name,
    });
    const created = await t.rest('POST', '/api/v1/publisher/sites', { key, body: { name } });
    await waitForOperation(t, key, created.body.data.project.id, created.body.data.operation.id);
    const res = await t.rest('POST', projectPath(created.body.data.project.id, '/recovery-points'), { key, body: {} });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'invalid_site_state', details: { site_status: 'provision_failed' } });
  });
});

describe('restore', () => {
  it('restores a completed point (202) back to its exact release, and the site runs again', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key, { runtime_version: '5.130.5' });
    const { res } = await takePoint(key, projectId);
    const pointId = res.body.data.recovery_point.id;
    // Move the site on to 5.130.6, then restore the 5.130.5 point.
    const up = await t.rest('POST', projectPath(projectId, '/upgrades'), { key, body: { target_version: '5.130.6' } });
    expect((await waitForOperation(t, key, projectId, up.body.data.operation.id)).status).toBe('completed');

    const restore = await t.rest('POST', projectPath(projectId, `/recovery-points/${pointId}/restore`), { key });
    expect(restore.status).toBe(202);
    expect(restore.body.data).toEqual({
      recovery_point: expect.objectContaining({ id: pointId, status: 'completed', runtime_version: '5.130.5' }),
      operation: expect.objectContaining({
        operation_type: 'restore',
        status: 'pending',
        step: 'queued',
        resource_id: projectId,
      }),
    });
    const busy = await t.rest('POST', projectPath(projectId, `/recovery-points/${pointId}/restore`), { key });
    expect([busy.status, busy.body.error.code]).toEqual([409, 'operation_in_progress']);
    const op = await waitForOperation(t, key, projectId, restore.body.data.operation.id);
    expect(op).toMatchObject({ status: 'completed', result: { recovery_point_id: pointId, runtime_version: '5.130.5' } });
    expect(op.steps.map((s: any) => s.id)).toEqual([
      'stop_runtime',
      'restore_database',
      'restore_content',
      'pin_release',
      'start_runtime',
      'health_check',
    ]);
    const meta = await t.rest('GET', projectPath(projectId, '/metadata'), { key });
    expect(meta.body.data.installation).toMatchObject({ status: 'running', runtime_version: '5.130.5' });
  });

  it('conceals a point of another project, or an unknown one, as 404; a body is refused', async () => {
    const { key } = await t.createKey();
    const mine = await runningSite(t, key);
    const theirs = await runningSite(t, key);
    const { res } = await takePoint(key, theirs);
    const otherProject = await t.rest('POST', projectPath(mine, `/recovery-points/${res.body.data.recovery_point.id}/restore`), {
      key,
    });
    expect(otherProject.status).toBe(404);
    expect(otherProject.body).toEqual(errorBody('recovery_point_not_found'));
    for (const id of ['00000000-0000-4000-8000-000000000000', 'nope']) {
      const r = await t.rest('POST', projectPath(mine, `/recovery-points/${id}/restore`), { key });
      expect([r.status, r.body.error.code]).toEqual([404, 'recovery_point_not_found']);
    }
    const stranger = await t.createKey();
    const foreign = await t.rest('POST', projectPath(theirs, `/recovery-points/${res.body.data.recovery_point.id}/restore`), {
      key: stranger.key,
    });
    expect([foreign.status, foreign.body.error.code]).toEqual([404, 'project_not_found']);
    const withBody = await t.rest('POST', projectPath(theirs, `/recovery-points/${res.body.data.recovery_point.id}/restore`), {
      key,
      body: { force: true },
    });
    expect(withBody.status).toBe(400);
  });
});

describe('history', () => {
  it('shows the running operation, then the latest one finished, plus the recovery points newest first', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key);
    const first = await takePoint(key, projectId);
    const second = await t.rest('POST', projectPath(projectId, '/recovery-points'), { key, body: { reason: 'second' } });
    const during = await t.rest('GET', projectPath(projectId, '/history'), { key });
    expect(during.status).toBe(200);
    expect(during.body.data).toMatchObject({
      project_id: projectId,
      active_operation: { id: second.body.data.operation.id, operation_type: 'recovery_point' },
      latest_operation: { id: second.body.data.operation.id },
    });
    await waitForOperation(t, key, projectId, second.body.data.operation.id);
    const after = await t.rest('GET', projectPath(projectId, '/history'), { key });
    expect(after.body.data).toEqual({
      project_id: projectId,
      active_operation: null,
      latest_operation: expect.objectContaining({ id: second.body.data.operation.id, status: 'completed' }),
      recovery_points: [
        expect.objectContaining({ id: second.body.data.recovery_point.id, status: 'completed', reason: 'second' }),
        expect.objectContaining({ id: first.res.body.data.recovery_point.id, status: 'completed' }),
      ],
    });
  });
});
