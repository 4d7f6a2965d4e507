import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import {
  installEnv,
  integrityMatches,
  nativeToolchain,
  RuntimeCache,
  runtimeCacheRoot,
  type InstallProgress,
} from '../../dataplane/runtime-cache';

const FAKE_NPM = path.join(__dirname, 'fixtures', 'fake-npm.js');
const FAKE_NODE_GYP = path.join(__dirname, 'fixtures', 'fake-node-gyp.js');

describe('data plane runtime cache', () => {
  let work: string;
  let root: string;
  let integrity: string;
  /** The fake npm behind a wrapper that sets its FAKE_NPM_* (the cache gives npm a clean environment). */
  let npm: string;
  let log: string;
  /** Its install exits with the number in this file (0 when there is none). */
  let installExit: string;
  const spec = () => ({ name: 'tinyrt', version: '1.0.0', integrity });
  const npmCalls = (cmd: string) =>
    existsSync(log)
      ? readFileSync(log, 'utf8')
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
    log = path.join(work, 'npm.log');
    installExit = path.join(work, 'install-exit');
    npm = path.join(work, 'npm');
    const q = (v: string) => `'${v.replaceAll("'", "'\\''")}'`;
    writeFileSync(
      npm,
      [
        '#!/bin/sh',
        `export FAKE_NPM_TARBALL=${q(tarball)} FAKE_NPM_LOG=${q(log)}`,
        `export FAKE_NPM_INSTALL_EXIT="$(cat ${q(installExit)} 2>/dev/null || echo 0)"`,
        `exec ${q(process.execPath)} ${q(FAKE_NPM)} "$@"`,
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
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
    const cache = new RuntimeCache({ root, npm });
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
    const c = await new RuntimeCache({ root, npm }).ensure(spec(), (p) => again.push(p));
    expect(c.dir).toBe(a.dir);
    expect(again.map((p) => p.phase)).toEqual(['cached']);
    expect(npmCalls('pack')).toBe(1);
    // No staging directory or lock is left behind.
    expect(readFileSync(path.join(a.dir, '.platform-runtime.json'), 'utf8')).toContain(integrity);
    expect(existsSync(cache.lockPath('tinyrt', '1.0.0'))).toBe(false);
  });

  it('refuses a tarball whose integrity differs from the catalog, and installs nothing', async () => {
    const cache = new RuntimeCache({ root, npm });
    const bad = { ...spec(), integrity: `sha512-${createHash('sha512').update('tampered').digest('base64')}` };
    await expect(cache.ensure(bad)).rejects.toMatchObject({ code: 'runtime_integrity_mismatch' });
    expect(npmCalls('install')).toBe(0);
    expect(existsSync(cache.dir('tinyrt', '1.0.0'))).toBe(false);
    expect(await cache.installed(bad)).toBeNull();
  });

  it('reports a failed install and leaves no half-installed runtime', async () => {
    writeFileSync(installExit, '1');
    const cache = new RuntimeCache({ root, npm });
    await expect(cache.ensure(spec())).rejects.toMatchObject({ code: 'runtime_install_failed' });
    expect(existsSync(cache.dir('tinyrt', '1.0.0'))).toBe(false);
    expect(existsSync(cache.lockPath('tinyrt', '1.0.0'))).toBe(false);
    rmSync(installExit);
    await expect(cache.ensure(spec())).resolves.toMatchObject({ version: '1.0.0' });
  });

  it('waits for another process that holds the lock, then uses its install', async () => {
    const cache = new RuntimeCache({ root, npm, lockPollMs: 50 });
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
    const cache = new RuntimeCache({ root, npm, staleLockMs: 1_000, lockPollMs: 50 });
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

  it("installs with a clean environment, runs no dependency's install script, and builds only the native parts it names", async () => {
    const saved = { ...process.env };
    // Platform variables a dependency's install script must never see.
    Object.assign(process.env, {
      SECRET_ENCRYPTION_KEY: 'platform-secret-4f1e',
      MAIL_SMTP_URL: 'smtp://relay:platform-secret-4f1e@relay.example',
      HTTPS_PROXY: 'http://proxy.example:3128',
      NODE_GYP: FAKE_NODE_GYP,
    });
    try {
      const seen: InstallProgress[] = [];
      const got = await new RuntimeCache({ root, npm, nativeBuilds: ['nativepkg', 'prebuilt', 'absent'] }).ensure(spec(), (p) =>
        seen.push(p),
      );
      const calls = readFileSync(`${log}.json`, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { cmd: string; args: string[]; env: Record<string, string> });
      expect(calls.map((c) => c.cmd)).toEqual(['pack', 'install']);
      const install = calls[1];
      expect(install.args).toContain('--ignore-scripts');
      const gyp = JSON.parse(readFileSync(path.join(got.dir, 'node_modules', 'nativepkg', 'build', 'gyp-run.json'), 'utf8')) as {
        args: string[];
        env: Record<string, string>;
      };
      expect(gyp.args[0]).toBe('rebuild');
      // The prebuilt binding is kept, and a named package the runtime does not have is skipped.
      expect(existsSync(path.join(got.dir, 'node_modules', 'prebuilt', 'build', 'gyp-run.json'))).toBe(false);
      expect(seen.filter((p) => p.phase === 'build_native').map((p) => p.detail)).toEqual([
        'building the nativepkg binding against this Node',
      ]);
      const allowed = new Set([...Object.keys(installEnv('/h')), 'npm_config_userconfig', 'HTTPS_PROXY']);
      for (const env of [...calls.map((c) => c.env), gyp.env]) {
        const own = Object.keys(env).filter((k) => !k.startsWith('FAKE_NPM_') && !/^(PWD|SHLVL|_|OLDPWD)$/.test(k));
        expect(own.filter((k) => !allowed.has(k))).toEqual([]);
        expect(JSON.stringify(env)).not.toContain('platform-secret-4f1e');
        expect(env.HTTPS_PROXY).toBe('http://proxy.example:3128');
        // A HOME of its own, gone with the staging directory; npm's download cache is the user's.
        expect(env.HOME).not.toBe(homedir());
        expect(existsSync(env.HOME)).toBe(false);
        expect(env.npm_config_cache).toBe(saved.npm_config_cache ?? path.join(homedir(), '.npm'));
      }
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });

  it("finds npm's own node-gyp and this Node's headers", () => {
    const t = nativeToolchain();
    expect(t.nodeGyp).toMatch(/node-gyp\.js$/);
    expect(existsSync(t.nodeGyp)).toBe(true);
  });
});
