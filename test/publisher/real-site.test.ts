import http from 'node:http';
import { findArea } from '../../app/areas';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { PREFIX, projectPath } from './helpers';

const GhostAdminAPI = require('@tryghost/admin-api');

/**
 * A site run for real through the REST API (PUBLISHER_EXECUTOR=real): Ghost from the runtime cache
 * as a supervised process with its own SQLite file, served by the edge at its `site_url`
 * (docs/decisions/0120-data-plane.md). A cold cache installs Ghost first (up to ~20 min on a loaded
 * machine); cached, the whole file takes about a minute.
 */

/** A request to the edge as the site's host (`*.sites.localhost` does not resolve in Node). */
function viaEdge(
  edgeUrl: string,
  host: string,
  method: string,
  p: string,
  opts: { body?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: string }> {
  const edge = new URL(edgeUrl);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: edge.port, method, path: p, headers: { host, ...opts.headers }, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      },
    );
    req.on('error', reject);
    if (opts.body) req.write(opts.body);
    req.end();
  });
}

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
  async function adminKey(): Promise<{ admin_api_url: string; admin_api_key: string }> {
    const command = findArea('publisher').cli!.find((c) => c.words.join(' ') === 'sites admin-key')!;
    return (await command.run({
      values: { project: projectId, json: true },
      services: t.platform.services.publisher,
      ctx: undefined as never,
    })) as { admin_api_url: string; admin_api_key: string };
  }

  it('gives the operator the Admin API key through the CLI; @tryghost/admin-api creates a post with it', async () => {
    const access = await adminKey();
    expect(access.admin_api_url).toBe(siteUrl.replace(/\/$/, ''));
    expect(access.admin_api_key).toMatch(/^[0-9a-f]{24}:[0-9a-f]{64}$/);
    const makeRequest = async ({ url: u, method, data, params, headers }: any) => {
      const target = new URL(u);
      for (const [k, v] of Object.entries(params ?? {})) target.searchParams.set(k, String(v));
      const r = await viaEdge(t.platform.edgeUrl!, host, method.toUpperCase(), target.pathname + target.search, {
        headers: { ...headers, 'content-type': 'application/json' },
        body: data ? JSON.stringify(data) : undefined,
      });
      if (r.status >= 400) throw new Error(`${r.status} ${r.body.slice(0, 200)}`);
      return JSON.parse(r.body);
    };
    const api = new GhostAdminAPI({ url: access.admin_api_url, key: access.admin_api_key, version: 'v5.0', makeRequest });
    const post = await api.posts.add({ title: 'Hello from the platform', status: 'published' });
    expect(post.title).toBe('Hello from the platform');
    const page = await viaEdge(t.platform.edgeUrl!, host, 'GET', `/${post.slug}/`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('Hello from the platform');
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
});
