import { startTestPlatform, type TestPlatform } from '../support/platform';
import { PREFIX, UUID, errorBody, failNext, projectPath, runningSite, settled, waitForOperation } from './support';

let t: TestPlatform;

beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(async () => {
  await t.stop();
});

const upgrade = (key: string, projectId: string, target_version: unknown) =>
  t.rest('POST', projectPath(projectId, '/upgrades'), { key, body: { target_version } });

describe('upgrades', () => {
  it('refuses a version off the catalog edges (400 unsupported_upgrade_path) and an unknown version (400)', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key, { runtime_version: '5.120.3' });
    const skip = await upgrade(key, projectId, '5.130.6');
    expect(skip.status).toBe(400);
    expect(skip.body).toEqual(errorBody('unsupported_upgrade_path'));
    expect(skip.body.error.details).toEqual({
      from_version: '5.120.3',
      target_version: '5.130.6',
      allowed_targets: ['5.126.0', '5.130.5'],
    });
    expect((await upgrade(key, projectId, '5.120.3')).body.error.code).toBe('unsupported_upgrade_path');
    const unknown = await upgrade(key, projectId, '7.0.0');
    expect([unknown.status, unknown.body.error.code]).toEqual([400, 'invalid_request']);
    const missing = await t.rest('POST', projectPath(projectId, '/upgrades'), { key, body: {} });
    expect([missing.status, missing.body.error.code]).toEqual([400, 'invalid_request']);
    // Nothing was recorded or started by the refusals.
    expect((await t.rest('GET', projectPath(projectId, '/recovery-points'), { key })).body.data).toEqual([]);
  });

  it('records the pre-upgrade point before anything changes, then upgrades along the edge (202)', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key, { runtime_version: '5.130.5' });
    const down = await upgrade(key, projectId, '5.126.0');
    expect([down.status, down.body.error.code]).toEqual([400, 'unsupported_upgrade_path']);

    const res = await upgrade(key, projectId, '5.130.6');
    expect(res.status).toBe(202);
    expect(res.body.data).toEqual({
      recovery_point: expect.objectContaining({
        id: expect.stringMatching(UUID),
        kind: 'pre_upgrade',
        status: 'pending',
        runtime_version: '5.130.5',
        operation_id: res.body.data.operation.id,
      }),
      operation: expect.objectContaining({ operation_type: 'upgrade', status: 'pending', step: 'queued' }),
      from_version: '5.130.5',
      target_version: '5.130.6',
    });
    // The record exists before the operation has changed anything.
    const listed = await t.rest('GET', projectPath(projectId, '/recovery-points'), { key });
    expect(listed.body.data[0]).toMatchObject({
      id: res.body.data.recovery_point.id,
      kind: 'pre_upgrade',
      runtime_version: '5.130.5',
    });

    const op = await waitForOperation(t, key, projectId, res.body.data.operation.id);
    expect(op).toMatchObject({
      status: 'completed',
      result: {
        rolled_back: false,
        runtime_version: '5.130.6',
        from_version: '5.130.5',
        recovery_point_id: res.body.data.recovery_point.id,
      },
    });
    expect(op.steps.map((s: any) => s.id)).toEqual([
      'capture_database',
      'capture_content',
      'capture_release',
      'seal_recovery_point',
      'pull_image',
      'stop_runtime',
      'migrate_database',
      'start_runtime',
      'health_check',
    ]);
    const meta = await t.rest('GET', projectPath(projectId, '/metadata'), { key });
    expect(meta.body.data.installation).toMatchObject({ runtime_version: '5.130.6', status: 'running' });
    const [point] = (await t.rest('GET', projectPath(projectId, '/recovery-points'), { key })).body.data;
    expect(point).toMatchObject({ kind: 'pre_upgrade', status: 'completed', runtime_version: '5.130.5' });
  });

  it('rolls a failed upgrade back to the pre-upgrade point; the site keeps its old version', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key, { runtime_version: '5.126.0' });
    failNext(t, projectId, 'upgrade', 'migrate_database', 'migration_failed');
    const res = await upgrade(key, projectId, '5.130.5');
    expect(res.status).toBe(202);
    const op = await waitForOperation(t, key, projectId, res.body.data.operation.id);
    expect(op).toMatchObject({
      status: 'failed',
      error_code: 'upgrade_failed',
      error_message: expect.stringContaining('rolled back'),
      result: {
        rolled_back: true,
        recovery_point_id: res.body.data.recovery_point.id,
        runtime_version: '5.126.0',
        failed_step: 'migrate_database',
        cause_code: 'migration_failed',
      },
    });
    expect(op.steps.map((s: any) => [s.id, s.status]).slice(-3)).toEqual([
      ['stop_runtime', 'completed'],
      ['migrate_database', 'failed'],
      ['rollback', 'completed'],
    ]);
    const meta = await t.rest('GET', projectPath(projectId, '/metadata'), { key });
    expect(meta.body.data.installation).toMatchObject({ runtime_version: '5.126.0', status: 'running' });
    expect(meta.body.data.active_operation).toBeNull();
    const [point] = (await t.rest('GET', projectPath(projectId, '/recovery-points'), { key })).body.data;
    expect(point).toMatchObject({ id: res.body.data.recovery_point.id, status: 'completed', runtime_version: '5.126.0' });
    // The edge is still there to try again.
    const again = await upgrade(key, projectId, '5.130.5');
    expect(again.status).toBe(202);
    expect((await waitForOperation(t, key, projectId, again.body.data.operation.id)).status).toBe('completed');
  });

  it('does not start the upgrade when the pre-upgrade capture fails: the point is incomplete, nothing changed', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key, { runtime_version: '5.130.5' });
    failNext(t, projectId, 'upgrade', 'capture_content');
    const res = await upgrade(key, projectId, '5.130.6');
    const op = await waitForOperation(t, key, projectId, res.body.data.operation.id);
    expect(op.status).toBe('failed');
    expect(op.steps.map((s: any) => s.id)).toEqual(['capture_database', 'capture_content']);
    const [point] = (await t.rest('GET', projectPath(projectId, '/recovery-points'), { key })).body.data;
    expect(point).toMatchObject({ kind: 'pre_upgrade', status: 'incomplete' });
    expect((await t.rest('GET', projectPath(projectId, '/metadata'), { key })).body.data.installation.runtime_version).toBe(
      '5.130.5',
    );
  });

  it('only upgrades a running site (409 invalid_site_state when stopped)', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key);
    const stop = await t.rest('POST', projectPath(projectId, '/actions'), { key, body: { action: 'stop' } });
    await waitForOperation(t, key, projectId, stop.body.data.operation.id);
    const res = await upgrade(key, projectId, '5.130.6');
    expect([res.status, res.body.error.code]).toEqual([409, 'invalid_site_state']);
  });
});

describe('staging copies', () => {
  it('takes a fresh point and builds a running staging site from it (202)', async () => {
    const { key } = await t.createKey();
    const source = await runningSite(t, key, { name: 'Shop Front', runtime_version: '5.126.0', mail_enabled: true });
    const res = await t.rest('POST', projectPath(source, '/staging'), { key, body: { name: 'Shop Front QA' } });
    expect(res.status).toBe(202);
    const data = res.body.data;
    expect(data).toEqual({
      source_recovery_point: expect.objectContaining({
        kind: 'staging_source',
        status: 'pending',
        project_id: source,
        runtime_version: '5.126.0',
      }),
      operation: expect.objectContaining({ operation_type: 'staging', project_id: source, status: 'pending', step: 'queued' }),
      project: { id: expect.stringMatching(UUID), source_type: 'publisher', runtime: 'publisher' },
      site_url: expect.stringMatching(/^http:\/\/shop-front-qa-[0-9a-f]{6}\.sites\.localhost:\d+\/$/),
      admin_url: `${data.site_url}ghost/`,
    });
    const stagingId = data.project.id;
    // The source is busy while it is copied; the operation is readable under both projects.
    const busy = await t.rest('POST', projectPath(source, '/actions'), { key, body: { action: 'restart' } });
    expect([busy.status, busy.body.error.code]).toEqual([409, 'operation_in_progress']);
    const op = await waitForOperation(t, key, stagingId, data.operation.id);
    expect(op).toMatchObject({
      status: 'completed',
      resource_id: stagingId,
      result: {
        staging_project_id: stagingId,
        source_recovery_point_id: data.source_recovery_point.id,
        runtime_version: '5.126.0',
      },
    });
    const meta = await t.rest('GET', projectPath(stagingId, '/metadata'), { key });
    expect(meta.body.data).toMatchObject({
      installation: {
        status: 'running',
        environment: 'staging',
        runtime_version: '5.126.0',
        source_project_id: source,
        source_recovery_point_id: data.source_recovery_point.id,
        deployment_mode: 'hosted',
      },
      project: { name: 'Shop Front QA' },
      mail: { enabled: false },
    });
    const [point] = (await t.rest('GET', projectPath(source, '/recovery-points'), { key })).body.data;
    expect(point).toMatchObject({ id: data.source_recovery_point.id, kind: 'staging_source', status: 'completed' });
    await settled(t, key, source);
  });

  it('names the copy after its source by default and validates the body', async () => {
    const { key } = await t.createKey();
    const source = await runningSite(t, key, { name: 'Daily' });
    const bad = await t.rest('POST', projectPath(source, '/staging'), { key, body: { name: 'x'.repeat(64) } });
    expect([bad.status, bad.body.error.code]).toEqual([400, 'invalid_request']);
    const res = await t.rest('POST', projectPath(source, '/staging'), { key });
    expect(res.status).toBe(202);
    await waitForOperation(t, key, source, res.body.data.operation.id);
    const meta = await t.rest('GET', projectPath(res.body.data.project.id, '/metadata'), { key });
    expect(meta.body.data.project.name).toBe('Daily staging');
  });

  it('counts the copy as a hosted site: the free plan has no slot left for it (402), and nothing is left locked', async () => {
    const { key } = await t.createKey({ plan: 'free' });
    const source = await runningSite(t, key);
    const res = await t.rest('POST', projectPath(source, '/staging'), { key, body: {} });
    expect(res.status).toBe(402);
    expect(res.body).toEqual(errorBody('plan_limit_reached'));
    expect((await t.rest('GET', projectPath(source, '/recovery-points'), { key })).body.data).toEqual([]);
    const restart = await t.rest('POST', projectPath(source, '/actions'), { key, body: { action: 'restart' } });
    expect(restart.status).toBe(202);
  });

  it('marks a copy whose source capture failed provision_failed; retry_provisioning takes a fresh point', async () => {
    const { key } = await t.createKey();
    const source = await runningSite(t, key);
    failNext(t, source, 'staging', 'capture_database');
    const res = await t.rest('POST', projectPath(source, '/staging'), { key, body: {} });
    const stagingId = res.body.data.project.id;
    expect((await waitForOperation(t, key, source, res.body.data.operation.id)).status).toBe('failed');
    expect((await t.rest('GET', projectPath(stagingId, '/metadata'), { key })).body.data.installation.status).toBe(
      'provision_failed',
    );
    const retry = await t.rest('POST', projectPath(stagingId, '/actions'), { key, body: { action: 'retry_provisioning' } });
    expect(retry.status).toBe(202);
    expect(retry.body.data.operation).toMatchObject({ operation_type: 'staging', resource_id: stagingId, project_id: source });
    expect((await waitForOperation(t, key, stagingId, retry.body.data.operation.id)).status).toBe('completed');
    const points = (await t.rest('GET', projectPath(source, '/recovery-points'), { key })).body.data;
    expect(points.map((p: any) => p.status)).toEqual(['completed', 'incomplete']);
    expect((await t.rest('GET', projectPath(stagingId, '/metadata'), { key })).body.data.installation).toMatchObject({
      status: 'running',
      source_recovery_point_id: points[0].id,
    });
  });

  it('refuses a staging copy of a site that is not running or stopped', async () => {
    const { key } = await t.createKey();
    const created = await t.rest('POST', `${PREFIX}/sites`, { key, body: { name: 'Young' } });
    const res = await t.rest('POST', projectPath(created.body.data.project.id, '/staging'), { key, body: {} });
    expect([res.status, res.body.error.code]).toEqual([409, 'operation_in_progress']);
    await waitForOperation(t, key, created.body.data.project.id, created.body.data.operation.id);
  });
});
