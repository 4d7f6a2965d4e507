import { startTestPlatform, type TestPlatform } from '../support/platform';
import { PROVISION_STEPS, waitForOperation } from '../publisher/support';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
let t: TestPlatform;

beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(async () => {
  await t.stop();
});

describe('publishing sites through the REST bridge', () => {
  it('lists the runtime catalog with one default and upgrade predecessors', async () => {
    const { key } = await t.createKey();
    const res = await t.rest('GET', '/api/v1/publisher/runtime-options', { key });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.data.length).toBeGreaterThanOrEqual(3);
    expect(res.body.data.filter((o: any) => o.is_default)).toHaveLength(1);
    expect(res.body.data[0]).toEqual({
      version: expect.stringMatching(/^\d+\.\d+\.\d+$/),
      label: expect.any(String),
      image: expect.any(String),
      digest: expect.stringMatching(/^sha512-[A-Za-z0-9+/]{86}==$/),
      database_requirements: { engine: expect.any(String), min_version: expect.any(String), min_storage_gb: expect.any(Number) },
      memory_floor_mb: expect.any(Number),
      is_default: expect.any(Boolean),
      upgrade_predecessors: expect.any(Array),
    });
  });

  it('creates a site (202 exactly as spec 2.1), provisions it to completed, and serves its metadata', async () => {
    const { key } = await t.createKey();
    const res = await t.rest('POST', '/api/v1/publisher/sites', { key, body: { name: 'Field Notes', mail_enabled: true } });
    expect(res.status).toBe(202);
    expect(res.headers.get('x-request-id')).toBeTruthy();
    const data = res.body.data;
    expect(res.body).toEqual({
      success: true,
      data: {
        project: { id: expect.stringMatching(UUID), source_type: 'publisher', runtime: 'publisher' },
        site_url: expect.stringMatching(/^http:\/\/field-notes-[0-9a-f]{6}\.sites\.localhost:\d+\/$/),
        admin_url: `${data.site_url}ghost/`,
        operation: expect.objectContaining({
          id: expect.stringMatching(UUID),
          resource_type: 'site',
          operation_type: 'provision',
          status: 'pending',
          step: 'queued',
        }),
      },
    });

    const op = await waitForOperation(t, key, data.project.id, data.operation.id);
    expect(op.status).toBe('completed');
    expect(op.steps.map((s: any) => s.id)).toEqual(PROVISION_STEPS);
    expect(op.steps.every((s: any) => s.status === 'completed')).toBe(true);
    expect(op.error_code).toBeNull();

    const meta = await t.rest('GET', `/api/v1/publisher/projects/${data.project.id}/metadata`, { key });
    expect(meta.status).toBe(200);
    expect(meta.body.data.installation).toMatchObject({ status: 'running', runtime_version: '5.130.5', site_url: data.site_url });
    expect(meta.body.data.project).toMatchObject({ id: data.project.id, name: 'Field Notes' });
    expect(meta.body.data.database).toMatchObject({ engine: 'mysql', status: 'available' });
    expect(meta.body.data.active_operation).toBeNull();
    expect(meta.body.data.mail.enabled).toBe(true);
  });

  it('replays a create with the same Idempotency-Key and refuses a different body under it', async () => {
    const { key } = await t.createKey();
    const headers = { 'idempotency-key': 'create-once-1' };
    const first = await t.rest('POST', '/api/v1/publisher/sites', { key, headers, body: { name: 'Once' } });
    const again = await t.rest('POST', '/api/v1/publisher/sites', { key, headers, body: { name: 'Once' } });
    expect(first.status).toBe(202);
    expect(again.status).toBe(202);
    expect(again.body.data.project.id).toBe(first.body.data.project.id);
    expect(again.body.data.operation.id).toBe(first.body.data.operation.id);
    const other = await t.rest('POST', '/api/v1/publisher/sites', { key, headers, body: { name: 'Twice' } });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('idempotency_conflict');
  });

  it('answers 401 without a key or with a bad one', async () => {
    const none = await t.rest('GET', '/api/v1/publisher/runtime-options');
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ success: false, error: { code: 'unauthenticated', message: expect.any(String), details: {} } });
    const bad = await t.rest('POST', '/api/v1/publisher/sites', {
      key: 'pk_000000000000_notarealkeynotarealkeynotarealke',
      body: { name: 'x' },
    });
    expect(bad.status).toBe(401);
  });

  it('answers 400 for an unsupported version, an unknown field, a missing name and malformed JSON', async () => {
    const { key } = await t.createKey();
    const version = await t.rest('POST', '/api/v1/publisher/sites', { key, body: { name: 'v', runtime_version: '4.0.0' } });
    expect(version.status).toBe(400);
    // The catalog is an enum of the row (and of OpenAPI): a field error.
    expect(version.body.error).toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'runtime_version' }] } });
    const unknown = await t.rest('POST', '/api/v1/publisher/sites', { key, body: { name: 'v', colour: 'red' } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe('invalid_request');
    const missing = await t.rest('POST', '/api/v1/publisher/sites', { key, body: {} });
    expect(missing.status).toBe(400);
    const malformed = await t.rest('POST', '/api/v1/publisher/sites', { key, rawBody: '{"name": ' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('invalid_json');
    const action = await t.rest('POST', `/api/v1/publisher/projects/${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}/actions`, {
      key,
      body: { action: 'dance' },
    });
    expect(action.status).toBe(400);
    expect(action.body.error).toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'action' }] } });
  });

  it('answers 402 when the free plan already hosts its one site, even under concurrent creates', async () => {
    const { key } = await t.createKey({ plan: 'free' });
    const results = await Promise.all(
      [1, 2, 3, 4].map((i) => t.rest('POST', '/api/v1/publisher/sites', { key, body: { name: `Free ${i}` } })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([202, 402, 402, 402]);
    const refused = results.find((r) => r.status === 402)!;
    expect(refused.body.error).toMatchObject({ code: 'plan_limit_reached', details: { plan: 'free', limit: 1 } });
  });

  it("conceals another account's project as 404, and unknown routes answer with the error envelope", async () => {
    const owner = await t.createKey();
    const stranger = await t.createKey();
    const created = await t.rest('POST', '/api/v1/publisher/sites', { key: owner.key, body: { name: 'Private' } });
    const { project, operation } = created.body.data;
    for (const path of [`/projects/${project.id}/metadata`, `/projects/${project.id}/operations/${operation.id}`]) {
      const res = await t.rest('GET', `/api/v1/publisher${path}`, { key: stranger.key });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('project_not_found');
    }
    const action = await t.rest('POST', `/api/v1/publisher/projects/${project.id}/actions`, {
      key: stranger.key,
      body: { action: 'restart' },
    });
    expect(action.status).toBe(404);
    const nowhere = await t.rest('GET', '/api/v1/publisher/nowhere', { key: owner.key });
    expect(nowhere.status).toBe(404);
    expect(nowhere.body).toEqual({
      success: false,
      error: { code: 'route_not_found', message: expect.any(String), details: {} },
    });
  });

  it('answers 404 for runtime options and operations when the feature is disabled', async () => {
    const { key } = await t.createKey();
    const created = await t.rest('POST', '/api/v1/publisher/sites', { key, body: { name: 'Flagged' } });
    const { project, operation } = created.body.data;
    t.platform.services.publisher.features.publisherEnabled = false;
    try {
      const options = await t.rest('GET', '/api/v1/publisher/runtime-options', { key });
      expect(options.status).toBe(404);
      const op = await t.rest('GET', `/api/v1/publisher/projects/${project.id}/operations/${operation.id}`, { key });
      expect(op.status).toBe(404);
    } finally {
      t.platform.services.publisher.features.publisherEnabled = true;
    }
  });

  it('walks a failed provision to retry_provisioning and refuses actions that make no sense', async () => {
    const { key } = await t.createKey();
    const name = `Flaky ${Date.now()}`;
    t.platform.services.publisher.simulated.injectFailure({
      operationType: 'provision',
      step: 'pull_image',
      retriable: false,
      code: 'image_pull_failed',
      match: (op) => (op.input as { name?: string } | undefined)?.name === name,
    });
    const created = await t.rest('POST', '/api/v1/publisher/sites', { key, body: { name } });
    const { project, operation } = created.body.data;
    const failed = await waitForOperation(t, key, project.id, operation.id);
    expect(failed).toMatchObject({ status: 'failed', error_code: 'image_pull_failed', step: 'pull_image' });
    const start = await t.rest('POST', `/api/v1/publisher/projects/${project.id}/actions`, { key, body: { action: 'start' } });
    expect(start.status).toBe(409);
    expect(start.body.error.code).toBe('invalid_site_state');
    const retry = await t.rest('POST', `/api/v1/publisher/projects/${project.id}/actions`, {
      key,
      body: { action: 'retry_provisioning' },
    });
    expect(retry.status).toBe(202);
    expect(retry.body.data.operation).toMatchObject({ operation_type: 'provision', status: 'pending' });
    const again = await t.rest('POST', `/api/v1/publisher/projects/${project.id}/actions`, { key, body: { action: 'restart' } });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('operation_in_progress');
    const done = await waitForOperation(t, key, project.id, retry.body.data.operation.id);
    expect(done.status).toBe('completed');
  });

  it('refuses writes from a read-only key with 403 but lets it read', async () => {
    const { account } = await t.createKey();
    const reader = await t.createKey({ account, role: 'read_only' });
    const write = await t.rest('POST', '/api/v1/publisher/sites', { key: reader.key, body: { name: 'Nope' } });
    expect(write.status).toBe(403);
    expect(write.body.error.code).toBe('read_only_key');
    const read = await t.rest('GET', '/api/v1/publisher/runtime-options', { key: reader.key });
    expect(read.status).toBe(200);
  });

  it('serves its OpenAPI document and health endpoints', async () => {
    const openapi = await t.rest('GET', '/api/v1/openapi.json');
    expect(openapi.status).toBe(200);
    expect(openapi.body.openapi).toBe('3.1.0');
    expect(Object.keys(openapi.body.paths)).toContain('/api/v1/publisher/sites');
    expect((await t.rest('GET', '/healthz')).body).toEqual({ status: 'ok' });
    const ready = await t.rest('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.checks).toEqual({ mongodb: 'ok', kafka: 'ok' });
  });
});
