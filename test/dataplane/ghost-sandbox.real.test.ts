import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { requestLocal } from '../../core/outbound-http';
import { dataRoot, projectRoot } from '../../core/paths';
import { Edge } from '../../dataplane/edge';
import { RuntimeCache } from '../../dataplane/runtime-cache';
import { SiteHost } from '../../dataplane/sites';
import { Supervisor } from '../../dataplane/supervisor';

/**
 * docs/decisions/0273-tenant-sandbox.md, for a site: a real Ghost process in its sandbox, and a probe run inside that same sandbox
 * (its namespaces, its uid, its preload) that reports what a compromised site could reach. The site
 * declares a mail relay (a TCP listener of the host's): that, and only that, is reachable.
 */
const GHOST = {
  name: 'ghost',
  version: '5.130.5',
  integrity: 'sha512-s1jsT18VMeBwgfdFuNRwAbM1TPYz/9ZXATjdPUJ5dVPVY9TbatWMC0TGS5fdFyFn5Q/opacxsrMtpUl7HLrrfQ==',
};
const INTERNAL_PORTS = [27017, 9092, 4000, 4101, 4102, 4103, 4104, 4105, 4106, 4107, 4108, 3307, 8080];

describe("a Ghost site's sandbox, probed from inside", () => {
  const sup = new Supervisor({ stopTimeoutMs: 15_000 });
  const edge = new Edge({ port: 0 });
  const sitesRoot = mkdtempSync(path.join(tmpdir(), 'ghost-sandbox-'));
  const cache = new RuntimeCache();
  const sites = new SiteHost({ cache, supervisor: sup, edge, sitesRoot });
  const id = `site-${randomBytes(4).toString('hex')}`;
  const other = `site-${randomBytes(4).toString('hex')}`;
  let relay: net.Server;
  let relayPort: number;
  let host: string;

  beforeAll(async () => {
    expect(sup.sandbox).not.toBeNull();
    relay = net.createServer((c) => c.end('220 relay\r\n')).listen(0, '127.0.0.1');
    await new Promise((r) => relay.once('listening', r));
    relayPort = (relay.address() as net.AddressInfo).port;
    await sites.pullRuntime(GHOST);
    await edge.listen();
    host = `${id}.sites.localhost:${edge.port}`;
    const config = { mail__transport: 'SMTP', mail__options__host: '127.0.0.1', mail__options__port: String(relayPort) };
    await sites.start({ siteId: id, runtime: GHOST, url: `http://${host}/`, hosts: [host], memoryMb: 512, config });
  }, 900_000);

  afterAll(async () => {
    await sup.removeAll();
    await edge.close();
    relay?.close();
    rmSync(sitesRoot, { recursive: true, force: true });
  }, 60_000);

  /** Runs the probe (test/dataplane/fixtures/probe-app/cli.mjs, copied into the site's own directory) inside the site's sandbox. */
  async function probeInside(q: object): Promise<any> {
    const siteDir = path.join(sitesRoot, id);
    const probeDir = path.join(siteDir, 'probe');
    cpSync(path.join(__dirname, 'fixtures', 'probe-app'), probeDir, { recursive: true });
    const sandbox = sup.sandbox!;
    const { preload, config } = sandbox.preloadOf(id);
    const cmd = sandbox.enterCommand(id, [
      '/usr/bin/node',
      '--require',
      preload,
      path.join(probeDir, 'cli.mjs'),
      JSON.stringify(q),
    ]);
    expect(cmd).not.toBeNull();
    return new Promise((resolve, reject) => {
      const c = spawn(cmd!.command, cmd!.args, { env: { PATH: '/usr/bin:/bin', PLATFORM_SANDBOX_CONFIG: config } });
      let out = '';
      let err = '';
      c.stdout.on('data', (d: Buffer) => (out += d.toString()));
      c.stderr.on('data', (d: Buffer) => (err += d.toString()));
      c.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`probe exited ${code}: ${err}`))));
    });
  }

  it('serves through the edge from its sandbox, as its own uid, with its memory limit', async () => {
    const r = await requestLocal(edge.port, { headers: { host }, timeoutMs: 30_000 });
    expect(r.status).toBe(200);
    expect(r.body).toContain('<meta name="generator" content="Ghost 5.130">');
    const st = sup.status(id)!;
    expect(st.uid).toBeGreaterThan(0);
    expect(st.socketPath).toMatch(/http\.sock$/);
    expect(st.rssBytes).toBeGreaterThan(50 * 1024 * 1024);
  });

  it('reaches only its own files and processes, and no internal service but its declared mail relay', async () => {
    const data = dataRoot();
    const runtimeCache = cache.root;
    const marker = `ghost-marker-${process.pid}`;
    const out = await probeInside({
      list: [
        projectRoot(),
        data,
        path.join(data, 'keys'),
        sitesRoot,
        path.join(sitesRoot, other),
        runtimeCache,
        '/root',
        homedir(),
      ],
      read: [
        path.join(data, 'keys', 'INTERNAL_SIGNING_KEY'),
        path.join(data, 'keys', 'SECRET_ENCRYPTION_KEY'),
        '/proc/1/environ',
      ],
      write: [
        `/tmp/${marker}`,
        path.join(runtimeCache, marker),
        path.join(cache.dir('ghost', GHOST.version), marker),
        path.join(data, marker),
        path.join(sitesRoot, id, marker),
      ],
      ports: [...INTERNAL_PORTS, relayPort],
    });
    expect(out.uid).toBe(sup.status(id)!.uid);
    expect(out.uid).not.toBe(0);
    // bubblewrap's init, Ghost, and the probe itself: nothing of the host's.
    expect(out.pids.length).toBeLessThanOrEqual(3);
    expect(out.environs['1']).toBe('EACCES');
    for (const [p, v] of Object.entries(out.lists)) expect([p, v]).toEqual([p, expect.stringMatching(/^(EACCES|ENOENT)$/)]);
    for (const [p, v] of Object.entries(out.reads)) expect([p, v]).toEqual([p, expect.stringMatching(/^(EACCES|ENOENT)$/)]);
    // Its own directory is writable; the runtime (read-only), the cache, .data and the host's /tmp are not.
    expect(out.writes[path.join(sitesRoot, id, marker)]).toBe('written');
    for (const p of [
      path.join(runtimeCache, marker),
      path.join(cache.dir('ghost', GHOST.version), marker),
      path.join(data, marker),
    ]) {
      expect([p, out.writes[p]]).not.toEqual([p, 'written']);
      expect(existsSync(p)).toBe(false);
    }
    // Its /tmp is its own: written there, not on the host.
    expect(existsSync(`/tmp/${marker}`)).toBe(false);
    for (const p of INTERNAL_PORTS) expect([p, out.ports[p]]).toEqual([p, 'ECONNREFUSED']);
    expect(out.ports[relayPort]).toBe('connected');
  }, 60_000);
});
