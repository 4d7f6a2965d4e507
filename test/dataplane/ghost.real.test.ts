import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Edge } from '../../dataplane/edge';
import { GhostRunner, type GhostAdminAccess } from '../../dataplane/ghost';
import { RuntimeCache, type InstalledRuntime } from '../../dataplane/runtime-cache';
import { Supervisor } from '../../dataplane/supervisor';

const GhostAdminAPI = require('@tryghost/admin-api');

/**
 * The real thing: Ghost from the per-user runtime cache (installed once, ~4 min cold on this
 * machine; seconds once cached), served through the edge, with its owner set up and an Admin API key
 * that @tryghost/admin-api uses. One site, one file: the machine is shared.
 */
const GHOST = {
  name: 'ghost',
  version: '5.130.5',
  integrity: 'sha512-s1jsT18VMeBwgfdFuNRwAbM1TPYz/9ZXATjdPUJ5dVPVY9TbatWMC0TGS5fdFyFn5Q/opacxsrMtpUl7HLrrfQ==',
};

/** A request to the edge as `host` (`*.sites.localhost` resolves in browsers and curl, not in Node's resolver). */
function viaEdge(
  edgePort: number,
  host: string,
  method: string,
  p: string,
  opts: { body?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: edgePort, method, path: p, headers: { host, ...opts.headers } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    if (opts.body) req.write(opts.body);
    req.end();
  });
}

describe('a real Ghost site from the runtime cache, through the edge', () => {
  const cache = new RuntimeCache();
  const sup = new Supervisor({ stopTimeoutMs: 15_000 });
  const runner = new GhostRunner(sup);
  const edge = new Edge({ port: 0 });
  const id = `site-${randomBytes(4).toString('hex')}`;
  const siteDir = mkdtempSync(path.join(tmpdir(), 'ghost-site-'));
  let runtime: InstalledRuntime;
  let host: string;
  let url: string;
  let access: GhostAdminAccess;
  const figures: Record<string, unknown> = {};

  beforeAll(async () => {
    const t0 = Date.now();
    runtime = await cache.ensure(GHOST);
    figures.ensureMs = Date.now() - t0;
    await edge.listen();
    host = `${id}.sites.localhost:${edge.port}`;
    url = `http://${host}/`;
    const t1 = Date.now();
    const st = await runner.start({ id, runtimeDir: runtime.dir, siteDir, url, memoryMb: 512 });
    edge.upsert([host], { target: { host: '127.0.0.1', port: st.port }, state: 'running', owner: id });
    const health = await runner.waitHealthy(id, url, 180_000);
    figures.bootMs = Date.now() - t1;
    figures.version = health.version;
  }, 900_000);

  afterAll(async () => {
    figures.rssMb = Math.round((sup.status(id)?.rssBytes ?? 0) / 1024 / 1024);
    console.log(`ghost real-test figures: ${JSON.stringify(figures)}`);
    await sup.removeAll();
    await edge.close();
    rmSync(siteDir, { recursive: true, force: true });
  }, 60_000);

  it('serves the home page through the edge with the release as its generator', async () => {
    expect(figures.version).toBe('5.130');
    const home = await viaEdge(edge.port, host, 'GET', '/');
    expect(home.status).toBe(200);
    expect(home.body).toContain('<meta name="generator" content="Ghost 5.130">');
  });

  it('is set up before anyone else can claim it, and answers an Admin API key that works', async () => {
    expect(await runner.isOpenForSetup(id, url)).toBe(true);
    access = await runner.setUp(id, url, { name: 'Site Owner', email: 'owner@example.test', blogTitle: 'Real blog' });
    expect(access.adminApiKey).toMatch(/^[0-9a-f]{24}:[0-9a-f]{64}$/);
    expect(await runner.isOpenForSetup(id, url)).toBe(false);
    // A second setup (someone trying to claim the site) is refused.
    const claim = await viaEdge(edge.port, host, 'POST', '/ghost/api/admin/authentication/setup/', {
      headers: { 'content-type': 'application/json', origin: `http://${host}` },
      body: JSON.stringify({ setup: [{ name: 'x', email: 'x@example.test', password: 'Zz9!long-enough-pass', blogTitle: 'x' }] }),
    });
    expect(claim.status).toBe(403);

    // The key works with the official client (requests go to the edge with the site's Host).
    const makeRequest = async ({ url: u, method, data, params, headers }: any) => {
      const target = new URL(u);
      for (const [k, v] of Object.entries(params ?? {})) target.searchParams.set(k, String(v));
      const r = await viaEdge(edge.port, host, method.toUpperCase(), target.pathname + target.search, {
        headers: { ...headers, 'content-type': 'application/json' },
        body: data ? JSON.stringify(data) : undefined,
      });
      if (r.status >= 400) throw new Error(`${r.status} ${r.body.slice(0, 200)}`);
      return JSON.parse(r.body);
    };
    const api = new GhostAdminAPI({ url: `http://${host}`, key: access.adminApiKey, version: 'v5.0', makeRequest });
    const post = await api.posts.add({ title: 'Hello from the platform', status: 'published' });
    expect(post.id).toBeTruthy();
    const page = await viaEdge(edge.port, host, 'GET', `/${post.slug}/`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('Hello from the platform');
    // A wrong key is refused.
    const wrongSecret = `${access.adminApiKey.split(':')[0]}:${'0'.repeat(64)}`;
    const bad = new GhostAdminAPI({ url: `http://${host}`, key: wrongSecret, version: 'v5.0', makeRequest });
    await expect(bad.posts.browse({ limit: 1 })).rejects.toThrow(/^401/);
  });

  it('stops (the edge answers 503) and starts again on the same port with its data', async () => {
    const port = sup.status(id)!.port;
    await sup.stop(id);
    edge.setState(id, 'stopped');
    expect((await viaEdge(edge.port, host, 'GET', '/')).status).toBe(503);
    sup.start(id);
    await runner.waitHealthy(id, url, 120_000);
    edge.setState(id, 'running');
    expect(sup.status(id)!.port).toBe(port);
    const home = await viaEdge(edge.port, host, 'GET', '/');
    expect(home.status).toBe(200);
    expect(home.body).toContain('Hello from the platform');
    expect(await runner.isOpenForSetup(id, url)).toBe(false);
  });
});
