import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Edge } from '../../dataplane/edge';
import { type GhostAdminAccess, openForSetup, setUpGhost } from '../../dataplane/runtimes/ghost';
import { RuntimeCache } from '../../dataplane/runtime-cache';
import { SiteHost } from '../../dataplane/sites';
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
/** Its successor: the upgrade edge of the catalog this data plane is meant to serve. */
const GHOST_NEXT = {
  name: 'ghost',
  version: '5.130.6',
  integrity: 'sha512-CAWqPKt+7ws+/1NrVmvuiWiDZDEtutiu7niVMTku9uM29MjfNFFUVKM3giQBpZGZrUORXkWiXSlqbry4QGVrBw==',
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
  const sup = new Supervisor({ stopTimeoutMs: 15_000 });
  const edge = new Edge({ port: 0 });
  const sitesRoot = mkdtempSync(path.join(tmpdir(), 'ghost-sites-'));
  const sites = new SiteHost({ cache: new RuntimeCache(), supervisor: sup, edge, sitesRoot });
  const id = `site-${randomBytes(4).toString('hex')}`;
  let host: string;
  let url: string;
  let access: GhostAdminAccess;
  const figures: Record<string, unknown> = {};

  beforeAll(async () => {
    const t0 = Date.now();
    await sites.pullRuntime(GHOST);
    figures.ensureMs = Date.now() - t0;
    await edge.listen();
    host = `${id}.sites.localhost:${edge.port}`;
    url = `http://${host}/`;
    const started = await sites.start({ siteId: id, runtime: GHOST, url, hosts: [host], memoryMb: 512 });
    figures.bootMs = started.bootMs;
    figures.version = started.version;
  }, 900_000);

  afterAll(async () => {
    figures.rssMb = Math.round((sup.status(id)?.rssBytes ?? 0) / 1024 / 1024);
    console.log(`ghost real-test figures: ${JSON.stringify(figures)}`);
    await sup.removeAll();
    await edge.close();
    rmSync(sitesRoot, { recursive: true, force: true });
  }, 60_000);

  /** @tryghost/admin-api's requests, sent to the edge with the site's Host. */
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

  it('serves the home page through the edge with the release as its generator', async () => {
    expect(figures.version).toBe('5.130');
    const home = await viaEdge(edge.port, host, 'GET', '/');
    expect(home.status).toBe(200);
    expect(home.body).toContain('<meta name="generator" content="Ghost 5.130">');
  });

  it('is set up before anyone else can claim it, and answers an Admin API key that works', async () => {
    expect(await openForSetup(sites.endpoint(id), url)).toBe(true);
    access = await setUpGhost(sites.endpoint(id), url, { name: 'Site Owner', email: 'owner@example.test', title: 'Real blog' });
    expect(access.adminApiKey).toMatch(/^[0-9a-f]{24}:[0-9a-f]{64}$/);
    expect(await openForSetup(sites.endpoint(id), url)).toBe(false);
    // A second setup (someone trying to claim the site) is refused.
    const claim = await viaEdge(edge.port, host, 'POST', '/ghost/api/admin/authentication/setup/', {
      headers: { 'content-type': 'application/json', origin: `http://${host}` },
      body: JSON.stringify({ setup: [{ name: 'x', email: 'x@example.test', password: 'Zz9!long-enough-pass', blogTitle: 'x' }] }),
    });
    expect(claim.status).toBe(403);

    // The key works with the official client (requests go to the edge with the site's Host).
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
    const port = sites.metadata(id).port;
    await sites.stop(id);
    expect(sites.metadata(id)).toMatchObject({ state: 'stopped', port });
    expect((await viaEdge(edge.port, host, 'GET', '/')).status).toBe(503);
    await sites.resume(id);
    expect(sites.metadata(id)).toMatchObject({ state: 'running', port, restarts: 0 });
    const home = await viaEdge(edge.port, host, 'GET', '/');
    expect(home.status).toBe(200);
    expect(home.body).toContain('Hello from the platform');
    expect(await openForSetup(sites.endpoint(id), url)).toBe(false);
  });

  it('moves the site to the successor release: the database is migrated, the post is kept, the full version is the new one', async () => {
    const api = new GhostAdminAPI({ url: `http://${host}`, key: access.adminApiKey, version: 'v5.0', makeRequest });
    expect((await api.config.read()).version).toBe('5.130.5');
    await sites.pullRuntime(GHOST_NEXT);
    const t = Date.now();
    await sites.stop(id);
    const moved = await sites.start({ siteId: id, runtime: GHOST_NEXT, url, hosts: [host], memoryMb: 512 });
    figures.upgradeMs = Date.now() - t;
    expect(moved.version).toBe('5.130');
    expect((await api.config.read()).version).toBe('5.130.6');
    const home = await viaEdge(edge.port, host, 'GET', '/');
    expect(home.status).toBe(200);
    expect(home.body).toContain('Hello from the platform');
    expect(sites.metadata(id).state).toBe('running');
  });

  it("keeps two sites apart, and releases a removed site's port, routes and files", async () => {
    const other = `site-${randomBytes(4).toString('hex')}`;
    const otherHost = `${other}.sites.localhost:${edge.port}`;
    const { port } = await sites.start({
      siteId: other,
      runtime: GHOST,
      url: `http://${otherHost}/`,
      hosts: [otherHost],
      memoryMb: 512,
    });
    expect(port).not.toBe(sites.metadata(id).port);
    await sites.configure(other, { name: 'Other Owner', email: 'other@example.test', title: 'Other blog' });
    const home = await viaEdge(edge.port, otherHost, 'GET', '/');
    expect(home.body).toContain('Other blog');
    expect(home.body).not.toContain('Hello from the platform');
    expect(sites.siteDir(other)).not.toBe(sites.siteDir(id));
    await sites.remove(other);
    expect(sites.metadata(other).state).toBe('absent');
    expect((await viaEdge(edge.port, otherHost, 'GET', '/')).status).toBe(404);
    expect(existsSync(sites.siteDir(other))).toBe(false);
    // The first site is untouched.
    expect((await viaEdge(edge.port, host, 'GET', '/')).status).toBe(200);
  });
});
