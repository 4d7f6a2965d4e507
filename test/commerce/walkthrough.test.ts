import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { UUID, base, cli, commerce, connectApp, connectStorefront, tenant, waitOperation, waitRelease } from './support';

// Every log line of this file's platform lands here, to prove no credential is ever logged.
const LOG_FILE = path.join(tmpdir(), `commerce-walkthrough-${process.pid}.log`);
process.env.LOG_FILE = LOG_FILE;
const seenSecrets: string[] = [];

// A busy shared machine can stretch the operations here well past jest's default.
jest.setTimeout(180_000);

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(async () => {
  await t.stop();
});

afterAll(() => {
  const log = readFileSync(LOG_FILE, 'utf8');
  expect(log).toContain('commerce.verify');
  for (const s of seenSecrets) expect(log).not.toContain(s);
});

describe('commerce: connect → environment → verify → deploy → promote, through the bridge', () => {
  it('walks a storefront from connect to a promoted, healthy production release; no credential ever shows', async () => {
    const tn = await tenant(t);
    seenSecrets.push(tn.store.storefront_token, tn.store.admin_token, 'a-session-secret-of-some-length');
    const B = base(tn.projectId);
    const connect = await t.rest('POST', `${B}/connect`, {
      key: tn.key,
      body: {
        kind: 'storefront',
        store_domain: tn.store.store_domain,
        confirm_generic_storefront: true,
        settings: { default_locale: 'en-US', currency: 'EUR' },
      },
    });
    expect(connect.status).toBe(202);
    expect(connect.body).toEqual({
      success: true,
      status: 'success',
      status_code: 202,
      message: expect.any(String),
      data: expect.objectContaining({ id: expect.stringMatching(UUID), type: 'connect', status: 'queued' }),
    });
    const op = await waitOperation(t, tn.key, tn.projectId, connect.body.data.id);
    expect(op).toMatchObject({ status: 'succeeded', error_code: null, error_message: null });

    let conn = await t.rest('GET', B, { key: tn.key });
    expect(conn.status).toBe(200);
    expect(conn.body.data).toMatchObject({
      project_id: tn.projectId,
      kind: 'storefront',
      store_domain: tn.store.store_domain,
      state: 'pending',
      settings: { default_locale: 'en-US', currency: 'EUR' },
      environments: [],
    });

    const put = await t.rest('PUT', `${B}/environments/production`, {
      key: tn.key,
      body: {
        app_url: 'https://shop.example.com',
        public_storefront_token: tn.store.storefront_token,
        private_storefront_token: tn.store.storefront_token,
        storefront_id: '3f2b8c1e-6d4a-4e8b-9c2d-1a2b3c4d5e6f',
        session_secret: 'a-session-secret-of-some-length',
      },
    });
    expect(put.status).toBe(200);
    expect(put.body.data).toMatchObject({
      name: 'production',
      app_url: 'https://shop.example.com',
      has_public_storefront_token: true,
      has_private_storefront_token: true,
      has_session_secret: true,
      has_client_secret: false,
      has_automation_token: false,
      has_customer_account_secret: false,
      verification: { state: 'pending' },
    });
    expect(JSON.stringify(put.body)).not.toContain(tn.store.storefront_token);

    const verify = await t.rest('POST', `${B}/environments/production/verify`, { key: tn.key });
    expect(verify.status).toBe(202);
    expect(verify.body.data).toMatchObject({ type: 'verify', status: 'queued', environment: 'production' });
    expect((await waitOperation(t, tn.key, tn.projectId, verify.body.data.id)).status).toBe('succeeded');
    conn = await t.rest('GET', B, { key: tn.key });
    expect(conn.body.data.state).toBe('ready');
    expect(conn.body.data.environments[0].verification).toMatchObject({ state: 'ready', verified_at: expect.any(String) });
    expect(JSON.stringify(conn.body)).not.toContain(tn.store.storefront_token);

    // A pipeline deploys a preview; the health gate probes it on the stand-in.
    const deployed = await cli(t, 'commerce deploy', { project: tn.projectId, environment: 'preview', health: 'healthy' });
    expect(deployed).toMatchObject({
      release_id: expect.stringMatching(UUID),
      preview_id: deployed.release_id,
      status: 'queued',
    });
    expect(await waitRelease(t, tn.key, tn.projectId, deployed.release_id)).toMatchObject({
      status: 'healthy',
      environment: 'preview',
      preview_id: deployed.preview_id,
    });

    const promoted = await t.rest('POST', `${B}/storefront/promotions`, {
      key: tn.key,
      body: { preview_id: deployed.preview_id },
    });
    expect(promoted.status).toBe(202);
    expect(promoted.body.data).toMatchObject({
      environment: 'production',
      status: 'queued',
      source_preview_id: deployed.preview_id,
    });
    expect((await waitRelease(t, tn.key, tn.projectId, promoted.body.data.id)).status).toBe('healthy');

    const releases = await t.rest('GET', `${B}/releases`, { key: tn.key });
    expect(releases.body.data.items.map((r: any) => r.id)).toEqual([promoted.body.data.id, deployed.release_id]);
    expect(releases.body.data.next_cursor).toBeNull();

    // No credential in clear in any platform document either.
    const conn2 = t.platform.conn;
    for (const name of ['commerce_connections', 'commerce_environments', 'operations', 'idempotency_keys']) {
      const docs = await conn2.db!.collection(name).find({}).toArray();
      expect(JSON.stringify(docs)).not.toContain(tn.store.storefront_token);
    }
  });

  it('an app: bad automation token → verification fails COMMERCE_INVALID_CREDENTIALS; a new token resets it to pending, then ready', async () => {
    const tn = await tenant(t);
    seenSecrets.push(tn.store.admin_token);
    const B = base(tn.projectId);
    await connectApp(t, tn);
    const put = await t.rest('PUT', `${B}/environments/development`, {
      key: tn.key,
      body: {
        app_url: 'https://app.example.com',
        client_id: 'abc123',
        automation_token: 'cat_wrong',
        scopes: 'read_products,write_orders',
      },
    });
    expect(put.status).toBe(200);
    expect(put.body.data).toMatchObject({
      has_automation_token: true,
      scopes: 'read_products,write_orders',
      client_id: 'abc123',
    });
    const v1 = await t.rest('POST', `${B}/environments/development/verify`, { key: tn.key });
    const failed = await waitOperation(t, tn.key, tn.projectId, v1.body.data.id);
    expect(failed).toMatchObject({ status: 'failed', error_code: 'COMMERCE_INVALID_CREDENTIALS' });
    let conn = await t.rest('GET', B, { key: tn.key });
    expect(conn.body.data.state).toBe('invalid');
    expect(conn.body.data.environments[0].verification).toMatchObject({
      state: 'invalid',
      error_code: 'COMMERCE_INVALID_CREDENTIALS',
    });

    // Omitting the secret keeps it; sending the right one changes the credentials.
    const kept = await t.rest('PUT', `${B}/environments/development`, {
      key: tn.key,
      body: { app_url: 'https://app.example.com', client_id: 'abc123' },
    });
    expect(kept.body.data).toMatchObject({ has_automation_token: true, verification: { state: 'invalid' } });
    const fixed = await t.rest('PUT', `${B}/environments/development`, {
      key: tn.key,
      body: { app_url: 'https://app.example.com', client_id: 'abc123', automation_token: tn.store.admin_token },
    });
    expect(fixed.body.data.verification.state).toBe('pending');
    const v2 = await t.rest('POST', `${B}/environments/development/verify`, { key: tn.key });
    expect((await waitOperation(t, tn.key, tn.projectId, v2.body.data.id)).status).toBe('succeeded');
    conn = await t.rest('GET', B, { key: tn.key });
    expect(conn.body.data.state).toBe('ready');
    expect(JSON.stringify(conn.body)).not.toContain(tn.store.admin_token);
  });

  it('health gate: failing → failed (COMMERCE_FAILED_HEALTH_GATE), degraded → degraded, guarded retry', async () => {
    const tn = await tenant(t);
    const B = base(tn.projectId);
    await connectStorefront(t, tn);
    const bad = await cli(t, 'commerce deploy', { project: tn.projectId, environment: 'production', health: 'failing' });
    const failed = await waitRelease(t, tn.key, tn.projectId, bad.release_id);
    expect(failed).toMatchObject({ status: 'failed', error_code: 'COMMERCE_FAILED_HEALTH_GATE' });
    expect((await waitOperation(t, tn.key, tn.projectId, failed.operation_id)).error_code).toBe('COMMERCE_FAILED_HEALTH_GATE');

    const degradedDeploy = await cli(t, 'commerce deploy', {
      project: tn.projectId,
      environment: 'development',
      health: 'degraded',
    });
    expect((await waitRelease(t, tn.key, tn.projectId, degradedDeploy.release_id)).status).toBe('degraded');

    const good = await cli(t, 'commerce deploy', { project: tn.projectId, environment: 'preview' });
    expect((await waitRelease(t, tn.key, tn.projectId, good.release_id)).status).toBe('healthy');
    const refused = await t.rest('POST', `${B}/releases/${good.release_id}/retry`, { key: tn.key });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ success: false, status_code: 409, error: { code: 'COMMERCE_FAILED_HEALTH_GATE' } });

    // The deployment recovers; the retry runs the gate again and passes.
    const doc = await commerce(t).models.Release.findById(bad.release_id).lean();
    await commerce(t).control.setDeploymentHealth(doc!.deploymentId, 'healthy');
    // Eight concurrent retries: exactly one wins (conditional update); the others see it queued.
    const racers = await Promise.all(
      Array.from({ length: 8 }, () => t.rest('POST', `${B}/releases/${bad.release_id}/retry`, { key: tn.key })),
    );
    expect(racers.filter((r) => r.status === 202)).toHaveLength(1);
    expect(racers.filter((r) => r.status === 409).every((r) => r.body.error.code === 'COMMERCE_FAILED_HEALTH_GATE')).toBe(true);
    const retried = racers.find((r) => r.status === 202)!;
    expect(retried.body.data).toMatchObject({ id: bad.release_id, status: 'queued', attempts: 2 });
    expect((await waitRelease(t, tn.key, tn.projectId, bad.release_id)).status).toBe('healthy');

    // Promoting something that is not a healthy preview.
    const notPreview = await t.rest('POST', `${B}/storefront/promotions`, {
      key: tn.key,
      body: { preview_id: degradedDeploy.release_id },
    });
    expect(notPreview.status).toBe(404);
    expect(notPreview.body.error.code).toBe('COMMERCE_NOT_FOUND');
    const badPreview = await cli(t, 'commerce deploy', { project: tn.projectId, environment: 'preview', health: 'failing' });
    await waitRelease(t, tn.key, tn.projectId, badPreview.release_id);
    const unhealthy = await t.rest('POST', `${B}/storefront/promotions`, {
      key: tn.key,
      body: { preview_id: badPreview.preview_id },
    });
    expect(unhealthy.status).toBe(409);
    expect(unhealthy.body.error.code).toBe('COMMERCE_FAILED_HEALTH_GATE');
  });
});
