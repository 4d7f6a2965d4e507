import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  integrityMatches,
  nativeToolchain,
  RuntimeCache,
  runtimeCacheRoot,
  type InstallProgress,
} from '../../dataplane/runtime-cache';

const FAKE_NPM = path.join(__dirname, 'fixtures', 'fake-npm.js');

describe('data plane runtime cache', () => {
  let work: string;
  let root: string;
  let integrity: string;
  const spec = () => ({ name: 'tinyrt', version: '1.0.0', integrity });
  const npmCalls = (cmd: string) =>
    existsSync(process.env.FAKE_NPM_LOG!)
      ? readFileSync(process.env.FAKE_NPM_LOG!, 'utf8')
          .split('\n')
          .filter((l) => l.startsWith(`${cmd} `)).length
      : 0;

  beforeEach(() => {
    work = mkdtempSync(path.join(tmpdir(), 'rtcache-'));
    root = path.join(work, 'cache');
    const src = path.join(work, 'src', 'package');
    mkdirSync(src, { recursive: true });
    writeFileSync(
      path.join(src, 'package.json'),
      JSON.stringify({ name: 'tinyrt', version: '1.0.0', devDependencies: { 'from-git': 'github:x/y' } }),
    );
    writeFileSync(path.join(src, 'index.js'), 'module.exports = 1;\n');
    const tarball = path.join(work, 'tinyrt-1.0.0.tgz');
    execFileSync('tar', ['-czf', tarball, '-C', path.join(work, 'src'), 'package']);
    integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
    process.env.FAKE_NPM_TARBALL = tarball;
    process.env.FAKE_NPM_LOG = path.join(work, 'npm.log');
    delete process.env.FAKE_NPM_INSTALL_EXIT;
  });
  afterEach(() => rmSync(work, { recursive: true, force: true }));

  it('lives outside the checkout: PLATFORM_RUNTIME_CACHE, else the per-user cache directory', () => {
    expect(runtimeCacheRoot({ PLATFORM_RUNTIME_CACHE: '/srv/rt' })).toBe('/srv/rt');
    expect(runtimeCacheRoot({ XDG_CACHE_HOME: '/c' })).toBe('/c/hosting-platform/runtimes');
    expect(runtimeCacheRoot({})).toMatch(/\.cache\/hosting-platform\/runtimes$/);
  });

  it('checks a file against an integrity string', async () => {
    const f = path.join(work, 'f');
    writeFileSync(f, 'hello');
    const sha512 = createHash('sha512').update('hello').digest('base64');
    expect(await integrityMatches(f, `sha512-${sha512}`)).toBe(true);
    expect(await integrityMatches(f, `sha1-abc sha512-${sha512}`)).toBe(true);
    expect(await integrityMatches(f, `sha512-${createHash('sha512').update('other').digest('base64')}`)).toBe(false);
    expect(await integrityMatches(f, 'sha256-nonsense')).toBe(false);
    expect(await integrityMatches(f, '')).toBe(false);
  });

  it('installs once, without devDependencies, reports progress, and answers from the cache afterwards', async () => {
    const cache = new RuntimeCache({ root, npm: FAKE_NPM });
    const seen: InstallProgress[] = [];
    // Two concurrent callers in one process share the install.
    const [a, b] = await Promise.all([cache.ensure(spec(), (p) => seen.push(p)), cache.ensure(spec())]);
    expect(a.dir).toBe(path.join(root, 'tinyrt', '1.0.0'));
    expect(b.dir).toBe(a.dir);
    expect(npmCalls('install')).toBe(1);
    const manifest = JSON.parse(readFileSync(path.join(a.dir, 'package.json'), 'utf8'));
    expect(manifest.devDependencies).toBeUndefined();
    expect(existsSync(path.join(a.dir, 'index.js'))).toBe(true);
    expect(seen.map((p) => p.phase)).toEqual(expect.arrayContaining(['pack', 'verify', 'extract', 'install', 'done']));
    // A second cache object (another process, a later clone) finds it.
    const again: InstallProgress[] = [];
    const c = await new RuntimeCache({ root, npm: FAKE_NPM }).ensure(spec(), (p) => again.push(p));
    expect(c.dir).toBe(a.dir);
    expect(again.map((p) => p.phase)).toEqual(['cached']);
    expect(npmCalls('pack')).toBe(1);
    // No staging directory or lock is left behind.
    expect(readFileSync(path.join(a.dir, '.platform-runtime.json'), 'utf8')).toContain(integrity);
    expect(existsSync(cache.lockPath('tinyrt', '1.0.0'))).toBe(false);
  });

  it('refuses a tarball whose integrity differs from the catalog, and installs nothing', async () => {
    const cache = new RuntimeCache({ root, npm: FAKE_NPM });
    const bad = { ...spec(), integrity: `sha512-${createHash('sha512').update('tampered').digest('base64')}` };
    await expect(cache.ensure(bad)).rejects.toMatchObject({ code: 'runtime_integrity_mismatch' });
    expect(npmCalls('install')).toBe(0);
    expect(existsSync(cache.dir('tinyrt', '1.0.0'))).toBe(false);
    expect(await cache.installed(bad)).toBeNull();
  });

  it('reports a failed install and leaves no half-installed runtime', async () => {
    process.env.FAKE_NPM_INSTALL_EXIT = '1';
    const cache = new RuntimeCache({ root, npm: FAKE_NPM });
    await expect(cache.ensure(spec())).rejects.toMatchObject({ code: 'runtime_install_failed' });
    expect(existsSync(cache.dir('tinyrt', '1.0.0'))).toBe(false);
    expect(existsSync(cache.lockPath('tinyrt', '1.0.0'))).toBe(false);
    delete process.env.FAKE_NPM_INSTALL_EXIT;
    await expect(cache.ensure(spec())).resolves.toMatchObject({ version: '1.0.0' });
  });

  it('waits for another process that holds the lock, then uses its install', async () => {
    const cache = new RuntimeCache({ root, npm: FAKE_NPM, lockPollMs: 50 });
    // Another process holds the lock (fresh), then finishes its install and lets go.
    mkdirSync(cache.lockPath('tinyrt', '1.0.0'), { recursive: true });
    const phases: string[] = [];
    const waiting = cache.ensure(spec(), (p) => phases.push(p.phase));
    await new Promise((r) => setTimeout(r, 300));
    expect(phases).toEqual(['waiting_for_lock']);
    const dir = cache.dir('tinyrt', '1.0.0');
    mkdirSync(dir, { recursive: true });
    const marker = {
      name: 'tinyrt',
      version: '1.0.0',
      integrity,
      installedAt: new Date().toISOString(),
      installMs: 1,
      nodeAbi: process.versions.modules,
    };
    writeFileSync(path.join(dir, '.platform-runtime.json'), JSON.stringify(marker));
    // Its install is complete: the waiter need not wait for the lock to go.
    const got = await waiting;
    rmSync(cache.lockPath('tinyrt', '1.0.0'), { recursive: true });
    expect(got.dir).toBe(dir);
    expect(phases).toEqual(['waiting_for_lock', 'cached']);
    expect(npmCalls('pack')).toBe(0);
  });

  it('takes over a stale lock left by a crashed installer', async () => {
    const cache = new RuntimeCache({ root, npm: FAKE_NPM, staleLockMs: 1_000, lockPollMs: 50 });
    const lock = cache.lockPath('tinyrt', '1.0.0');
    mkdirSync(lock, { recursive: true });
    const old = new Date(Date.now() - 5_000);
    utimesSync(lock, old, old);
    // A staging directory the crashed installer left is cleaned up too.
    mkdirSync(path.join(root, 'tinyrt', '.staging-1.0.0-999-deadbeef'), { recursive: true });
    const got = await cache.ensure(spec());
    expect(got.version).toBe('1.0.0');
    expect(existsSync(path.join(root, 'tinyrt', '.staging-1.0.0-999-deadbeef'))).toBe(false);
    expect(existsSync(lock)).toBe(false);
  });

  it("finds npm's own node-gyp and this Node's headers", () => {
    const t = nativeToolchain();
    expect(t.nodeGyp).toMatch(/node-gyp\.js$/);
    expect(existsSync(t.nodeGyp)).toBe(true);
  });
});
