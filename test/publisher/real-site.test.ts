import { createHash } from 'node:crypto';
import { readlinkSync } from 'node:fs';
import { decryptSecret } from '../../core/secrets';
import { aad } from '../../subgraphs/publisher/site-credentials';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { viaEdge } from '../support/edge';
import { type AdminAccess, adminApi as adminApiOf, adminKey as adminKeyOf } from './ghost-admin';
import { PREFIX, projectPath } from './support';

/**
 * A site run for real through the REST API (PUBLISHER_EXECUTOR=real): Ghost from the runtime cache
 * as a supervised process with its own SQLite file, served by the edge at its `site_url`
 * (docs/decisions/0120-data-plane.md). A cold cache installs Ghost first (up to ~20 min on a loaded
 * machine); cached, the whole file takes a few minutes. Recovery points, restores, staging copies
 * and upgrades move the site's real bytes (docs/decisions/0150-recovery-point-bytes.md).
 */

async function waitFor(t: TestPlatform, key: string, projectId: string, operationId: string, timeoutMs: number): Promise<any> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await t.rest('GET', projectPath(projectId, `/operations/${operationId}`), { key });
    const op = res.body?.data;
    if (op && (op.status === 'completed' || op.status === 'failed')) return op;
    if (Date.now() > until) throw new Error(`operation ${operationId} still ${op?.status}/${op?.step} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe('a publishing site run for real, through the REST API and the edge', () => {
  let t: TestPlatform;
  let key: string;
  let projectId: string;
  let siteUrl: string;
  let adminUrl: string;
  let host: string;
  let provisionOp: any;
  const figures: Record<string, unknown> = {};
  /** Every site secret the platform holds (opened here from their sealed copies), to search the database for. */
  const secrets = new Map<string, string>();

  /** Opens a site's sealed credentials and remembers them (the Admin API key, its secret half, the owner's password). */
  async function rememberSecrets(siteId: string): Promise<void> {
    const creds = await t.platform.conn.collection('publisher_site_credentials').findOne({ _id: siteId as never });
    if (!creds) return;
    const adminKey = decryptSecret(creds.adminApiKeyCiphertext, aad(siteId, 'admin_api_key'));
    secrets.set(`${siteId} admin key`, adminKey);
    secrets.set(`${siteId} admin key secret`, adminKey.split(':').pop()!);
    secrets.set(`${siteId} owner password`, decryptSecret(creds.ownerPasswordCiphertext, aad(siteId, 'owner_password')));
  }

  /** Where any remembered secret is found in plain text: every document of every collection. */
  async function plainTextSecrets(): Promise<string[]> {
    const db = t.platform.conn.db!;
    const found: string[] = [];
    for (const c of await db.listCollections().toArray())
      for (const doc of await db.collection(c.name).find({}).toArray()) {
        const text = JSON.stringify(doc);
        for (const [what, value] of secrets)
          if (value && text.includes(value)) found.push(`${what} in ${c.name}/${String(doc._id)}`);
      }
    return found;
  }

  beforeAll(async () => {
    t = await startTestPlatform({ PUBLISHER_EXECUTOR: 'real' });
    ({ key } = await t.createKey());
    const t0 = Date.now();
    const created = await t.rest('POST', `${PREFIX}/sites`, { key, body: { name: 'Real Site' } });
    expect(created.status).toBe(202);
    projectId = created.body.data.project.id;
    siteUrl = created.body.data.site_url;
    adminUrl = created.body.data.admin_url;
    host = new URL(siteUrl).host;
    provisionOp = await waitFor(t, key, projectId, created.body.data.operation.id, 25 * 60_000);
    figures.provisionMs = Date.now() - t0;
    if (provisionOp.status !== 'completed')
      throw new Error(`provision failed: ${provisionOp.error_code} ${provisionOp.error_message}`);
    for (;;) {
      const r = await viaEdge(t.platform.edgeUrl!, host, 'GET', '/');
      if (r.status === 200) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    figures.createToFirst200Ms = Date.now() - t0;
    await rememberSecrets(projectId);
  }, 30 * 60_000);

  afterAll(async () => {
    console.log(`real site figures: ${JSON.stringify(figures)}`);
    await t?.stop();
  }, 120_000);

  it('serves Ghost at site_url through the edge, with the provisioning steps done for real and no secret in the API', async () => {
    expect(siteUrl).toBe(`http://${host}/`);
    expect(adminUrl).toBe(`${siteUrl}ghost/`);
    expect(host).toBe(`${new URL(siteUrl).hostname}:${new URL(t.platform.edgeUrl!).port}`);
    expect(provisionOp.steps.map((s: any) => [s.id, s.status])).toEqual(
      ['allocate_database', 'create_volume', 'pull_image', 'start_runtime', 'configure_site', 'health_check'].map((id) => [
        id,
        'completed',
      ]),
    );
    const home = await viaEdge(t.platform.edgeUrl!, host, 'GET', '/');
    expect(home.status).toBe(200);
    expect(home.body).toContain('<meta name="generator" content="Ghost 5.130">');
    // The machine steps ran as tasks of the hosted node, through the node agent's code (docs/decisions/0225-hosted-pool-node.md).
    const tasks = await t.platform.conn.collection('publisher_node_tasks').find({ operationId: provisionOp.id }).toArray();
    expect(tasks.map((x) => [x.step, x.nodeId, x.status, x.claims]).sort()).toEqual(
      ['configure_site', 'health_check', 'pull_image', 'start_runtime'].map((step) => [step, 'hosted', 'succeeded', 1]),
    );

    const meta = await t.rest('GET', projectPath(projectId, '/metadata'), { key });
    expect(meta.body.data.installation).toMatchObject({
      status: 'running',
      runtime_version: '5.130.5',
      image: 'npm:ghost@5.130.5',
      site_url: siteUrl,
    });
    // The Admin API key is sealed in the database and never served.
    const { admin_api_key } = await adminKey();
    const secret = admin_api_key.split(':')[1];
    for (const body of [meta.body, provisionOp, (await t.rest('GET', projectPath(projectId, '/history'), { key })).body])
      expect(JSON.stringify(body)).not.toContain(secret);
    const stored = await t.platform.conn.collection('publisher_site_credentials').findOne({ _id: projectId as never });
    expect(JSON.stringify(stored)).not.toContain(secret);
  });

  /** `npx platform sites admin-key --project ID --json`, run against this platform's services. */
  const adminKey = (project = projectId) => adminKeyOf(t, project);
  const adminApi = (access: AdminAccess) => adminApiOf(t, access);

  let post: { id: string; slug: string; title: string };

  it('gives the operator the Admin API key through the CLI; @tryghost/admin-api creates a post with it', async () => {
    const access = await adminKey();
    expect(access.admin_api_url).toBe(siteUrl.replace(/\/$/, ''));
    expect(access.admin_api_key).toMatch(/^[0-9a-f]{24}:[0-9a-f]{64}$/);
    post = await adminApi(access).posts.add({ title: 'Hello from the platform', status: 'published' });
    expect(post.title).toBe('Hello from the platform');
    const page = await viaEdge(t.platform.edgeUrl!, host, 'GET', `/${post.slug}/`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('Hello from the platform');
  });

  /** Runs a site request that answers 202 with an operation and waits for it. */
  async function accepted(method: string, path: string, body?: unknown): Promise<{ res: any; op: any }> {
    const res = await t.rest(method, projectPath(projectId, path), { key, body });
    expect(res.status).toBe(202);
    const project = res.body.data.operation.project_id ?? projectId;
    return { res, op: await waitFor(t, key, project, res.body.data.operation.id, 10 * 60_000) };
  }

  /** The post's page through the edge: the status (200 when it is there). */
  const postPage = async (siteHost = host) => (await viaEdge(t.platform.edgeUrl!, siteHost, 'GET', `/${post.slug}/`)).status;

  /** The release directory the site's process runs from. */
  const runningRelease = (id = projectId) =>
    readlinkSync(`/proc/${t.platform.dataPlane!.supervisor.status(id)!.pid}/cwd`)
      .split('/')
      .pop();

  let pointId: string;

  it('a recovery point seals the database, the content and the release as bytes in the blob store; restore brings a deleted post back', async () => {
    const t0 = Date.now();
    const { res, op } = await accepted('POST', '/recovery-points', { reason: 'before the cleanup' });
    figures.recoveryPointMs = Date.now() - t0;
    expect(op).toMatchObject({ status: 'completed' });
    pointId = res.body.data.recovery_point.id;
    const list = await t.rest('GET', projectPath(projectId, '/recovery-points'), { key });
    const point = list.body.data.find((p: any) => p.id === pointId);
    expect(point).toMatchObject({ status: 'completed', runtime_version: '5.130.5' });
    for (const part of ['database', 'content', 'release'] as const) {
      const c = point[part];
      expect(c).toMatchObject({ status: 'captured', sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
      expect(c.size_bytes).toBeGreaterThan(0);
      const store = t.platform.services.publisher.real.backups.store;
      // The bytes are in the store under that address and hash to it.
      const hash = createHash('sha256');
      for await (const chunk of store.read('recovery-points', c.sha256)) hash.update(chunk);
      expect(hash.digest('hex')).toBe(c.sha256);
      expect(await store.stat('recovery-points', c.sha256)).toBe(c.size_bytes);
    }
    expect(point.release.snapshot_id).toBe(
      'sha512-s1jsT18VMeBwgfdFuNRwAbM1TPYz/9ZXATjdPUJ5dVPVY9TbatWMC0TGS5fdFyFn5Q/opacxsrMtpUl7HLrrfQ==',
    );

    await adminApi(await adminKey()).posts.delete({ id: post.id });
    expect(await postPage()).toBe(404);

    // The edge answers 503 while the site is being restored.
    const seen = new Set<number>();
    let polling = true;
    const poller = (async () => {
      while (polling) {
        seen.add((await viaEdge(t.platform.edgeUrl!, host, 'GET', '/')).status);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const t1 = Date.now();
    const restored = await accepted('POST', `/recovery-points/${pointId}/restore`);
    figures.restoreMs = Date.now() - t1;
    polling = false;
    await poller;
    expect(restored.op).toMatchObject({ status: 'completed' });
    expect(restored.op.steps.map((s: any) => s.id)).toEqual([
      'stop_runtime',
      'restore_database',
      'restore_content',
      'pin_release',
      'start_runtime',
      'health_check',
    ]);
    expect(seen.has(503)).toBe(true);
    expect(await postPage()).toBe(200);
    expect((await adminApi(await adminKey()).posts.read({ id: post.id })).title).toBe('Hello from the platform');
  });

  it('a staging copy from a point serves the post, has its own admin key, and is independent of its source', async () => {
    const t0 = Date.now();
    const res = await t.rest('POST', projectPath(projectId, '/staging'), { key, body: { name: 'Real Site staging' } });
    expect(res.status).toBe(202);
    const copy = res.body.data;
    expect(copy.project.id).not.toBe(projectId);
    expect(copy.admin_url).toBe(`${copy.site_url}ghost/`);
    const op = await waitFor(t, key, projectId, copy.operation.id, 10 * 60_000);
    figures.stagingMs = Date.now() - t0;
    expect(op).toMatchObject({ status: 'completed' });
    const copyHost = new URL(copy.site_url).host;
    expect(copyHost).not.toBe(host);
    expect(await postPage(copyHost)).toBe(200);

    const source = await adminKey();
    const own = await adminKey(copy.project.id);
    await rememberSecrets(copy.project.id);
    expect(own.admin_api_url).toBe(copy.site_url.replace(/\/$/, ''));
    expect(own.admin_api_key).toMatch(/^[0-9a-f]{24}:[0-9a-f]{64}$/);
    expect(own.admin_api_key.split(':')[0]).not.toBe(source.admin_api_key.split(':')[0]);
    // The source's key does not open the copy.
    await expect(
      adminApi({ admin_api_url: own.admin_api_url, admin_api_key: source.admin_api_key }).posts.browse(),
    ).rejects.toMatchObject({
      status: 401,
    });
    // A change on the copy stays there, and one on the source stays on the source.
    const draft = await adminApi(own).posts.add({ title: 'Only on staging', status: 'published' });
    expect((await viaEdge(t.platform.edgeUrl!, copyHost, 'GET', `/${draft.slug}/`)).status).toBe(200);
    expect((await viaEdge(t.platform.edgeUrl!, host, 'GET', `/${draft.slug}/`)).status).toBe(404);
    const onSource = await adminApi(source).posts.add({ title: 'Only on the source', status: 'published' });
    expect((await viaEdge(t.platform.edgeUrl!, copyHost, 'GET', `/${onSource.slug}/`)).status).toBe(404);
    await adminApi(source).posts.delete({ id: onSource.id });

    // The copy goes again (it holds memory and a hosted-site slot); its source is untouched.
    const del = await t.rest('POST', projectPath(copy.project.id, '/actions'), { key, body: { action: 'delete' } });
    expect(del.status).toBe(202);
    expect(await waitFor(t, key, copy.project.id, del.body.data.operation.id, 5 * 60_000)).toMatchObject({ status: 'completed' });
    expect(await postPage()).toBe(200);
  });

  it('an upgrade whose new release fails its health check after damaging the data rolls back to the point: old release, post intact', async () => {
    const source = await adminKey();
    let damaged = false;
    // A broken 5.130.6: it deletes the post (as a bad migration would) and then fails its health check.
    t.platform.services.publisher.real.injectFault({
      operationType: 'upgrade',
      step: 'health_check',
      version: '5.130.6',
      code: 'health_check_failed',
      before: async () => {
        await adminApi(source).posts.delete({ id: post.id });
        expect(await postPage()).toBe(404);
        damaged = true;
      },
    });
    const t0 = Date.now();
    const { res, op } = await accepted('POST', '/upgrades', { target_version: '5.130.6' });
    figures.failedUpgradeWithRollbackMs = Date.now() - t0;
    expect(res.body.data.recovery_point.kind).toBe('pre_upgrade');
    expect(op).toMatchObject({ status: 'failed', error_code: 'upgrade_failed' });
    expect(damaged).toBe(true);
    expect(op.steps.map((s: any) => [s.id, s.status])).toEqual(
      expect.arrayContaining([
        ['health_check', 'failed'],
        ['rollback', 'completed'],
      ]),
    );
    const meta = await t.rest('GET', projectPath(projectId, '/metadata'), { key });
    expect(meta.body.data.installation).toMatchObject({ status: 'running', runtime_version: '5.130.5' });
    expect(runningRelease()).toBe('5.130.5');
    expect(await postPage()).toBe(200);
    expect((await adminApi(source).posts.read({ id: post.id })).title).toBe('Hello from the platform');
  });

  it('an upgrade along the catalog edge runs the new release on the migrated database and keeps the post', async () => {
    const t0 = Date.now();
    const { op } = await accepted('POST', '/upgrades', { target_version: '5.130.6' });
    figures.upgradeMs = Date.now() - t0;
    expect(op).toMatchObject({ status: 'completed' });
    const meta = await t.rest('GET', projectPath(projectId, '/metadata'), { key });
    expect(meta.body.data.installation).toMatchObject({
      status: 'running',
      runtime_version: '5.130.6',
      image: 'npm:ghost@5.130.6',
    });
    expect(runningRelease()).toBe('5.130.6');
    expect(await postPage()).toBe(200);
    expect((await adminApi(await adminKey()).posts.read({ id: post.id })).title).toBe('Hello from the platform');
  });

  it('stop → 503 on the edge; start → 200; delete → 404 on the edge and the site is gone', async () => {
    const action = async (name: string) => {
      const res = await t.rest('POST', projectPath(projectId, '/actions'), { key, body: { action: name } });
      expect(res.status).toBe(202);
      const op = await waitFor(t, key, projectId, res.body.data.operation.id, 5 * 60_000);
      expect(op).toMatchObject({ status: 'completed' });
      return op;
    };
    await action('stop');
    expect((await viaEdge(t.platform.edgeUrl!, host, 'GET', '/')).status).toBe(503);
    const t0 = Date.now();
    await action('start');
    figures.startMs = Date.now() - t0;
    expect((await viaEdge(t.platform.edgeUrl!, host, 'GET', '/')).status).toBe(200);

    await action('delete');
    expect((await viaEdge(t.platform.edgeUrl!, host, 'GET', '/')).status).toBe(404);
    expect((await t.rest('GET', projectPath(projectId, '/metadata'), { key })).status).toBe(404);
    expect(t.platform.dataPlane!.supervisor.status(projectId)).toBeNull();
    await expect(adminKey()).rejects.toThrow(/no admin access/);
  });

  it('keeps no Admin API key or owner password in plain text in any collection after provision, restore, staging and delete', async () => {
    // The source site's and the staging copy's (both deleted by now).
    expect(secrets.size).toBe(6);
    expect(await plainTextSecrets()).toEqual([]);
  });
});
