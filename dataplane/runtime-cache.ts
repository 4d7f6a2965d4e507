import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { mkdir, readFile, readdir, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { homedir, hostname } from 'node:os';
import path from 'node:path';

/**
 * The per-user runtime cache (docs/decisions/0120-data-plane.md): a runtime release from the npm
 * registry is installed once into `<root>/<name>/<version>/`, outside any checkout, and shared by every
 * site, every test run and every later clone, as Maven's cache holds Kafka. An install is staged in a
 * sibling directory and renamed into place only when complete, with a marker written last; concurrent
 * installs of one version (threads of one process, or several processes) happen once, behind a lock
 * directory whose holder keeps it fresh, so a crashed holder's lock is taken over.
 */

/** What to install: the npm package, its exact version and the registry's integrity of its tarball. */
export interface RuntimeSpec {
  name: string;
  version: string;
  /** `sha512-<base64>` (Subresource Integrity form), the registry's `dist.integrity`. */
  integrity: string;
}

export interface InstalledRuntime {
  name: string;
  version: string;
  integrity: string;
  /** The package's directory (holds its `package.json` and `node_modules`). */
  dir: string;
  installedAt: string;
  installMs: number;
  /** The Node ABI its native modules were built for (`process.versions.modules`). */
  nodeAbi: string;
}

export type InstallPhase =
  'cached' | 'waiting_for_lock' | 'pack' | 'verify' | 'extract' | 'install' | 'build_native' | 'check' | 'done';

export interface InstallProgress {
  phase: InstallPhase;
  /** One line for an operation's step detail. */
  detail: string;
  elapsedMs: number;
}

export type ProgressFn = (p: InstallProgress) => void;

export class RuntimeInstallError extends Error {
  constructor(
    readonly code: 'runtime_integrity_mismatch' | 'runtime_install_failed',
    message: string,
  ) {
    super(message);
    this.name = 'RuntimeInstallError';
  }
}

const MARKER = '.platform-runtime.json';

/** The cache root: `PLATFORM_RUNTIME_CACHE`, else `~/.cache/hosting-platform/runtimes` (XDG_CACHE_HOME honoured). */
export function runtimeCacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PLATFORM_RUNTIME_CACHE) return path.resolve(env.PLATFORM_RUNTIME_CACHE);
  const base = env.XDG_CACHE_HOME ? path.resolve(env.XDG_CACHE_HOME) : path.join(homedir(), '.cache');
  return path.join(base, 'hosting-platform', 'runtimes');
}

/** True when `integrity` (one or more `algo-base64` tokens) matches the bytes of `file`. */
export async function integrityMatches(file: string, integrity: string): Promise<boolean> {
  const tokens = integrity
    .trim()
    .split(/\s+/)
    .map((t) => /^(sha256|sha384|sha512)-([A-Za-z0-9+/=]+)/.exec(t))
    .filter((m): m is RegExpExecArray => m !== null);
  if (tokens.length === 0) return false;
  // The strongest algorithm present decides (as Subresource Integrity does).
  const order = ['sha256', 'sha384', 'sha512'];
  const best = tokens.reduce((a, b) => (order.indexOf(b[1]) > order.indexOf(a[1]) ? b : a));
  const hash = createHash(best[1]);
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  const digest = hash.digest('base64');
  return tokens.some((t) => t[1] === best[1] && t[2] === digest);
}

export interface RuntimeCacheOptions {
  root?: string;
  /** The `npm` executable (default: `npm` on PATH). */
  npm?: string;
  /** A lock whose holder has not refreshed it for this long is taken over (default 60 s). */
  staleLockMs?: number;
  /** How often the holder refreshes its lock (default 5 s). */
  lockRefreshMs?: number;
  /** How often a waiter looks at the lock again (default 500 ms). */
  lockPollMs?: number;
  /**
   * The packages of the runtime whose native part is built after the install (which runs no
   * install script): `NATIVE_BUILDS` by default. Each is built with node-gyp when its binding is
   * missing, then loaded once as a check.
   */
  nativeBuilds?: readonly string[];
}

/**
 * The only install scripts a runtime needs, done by the cache itself after `npm install
 * --ignore-scripts` (docs/decisions/0272-edge-and-egress-hardening.md). In `ghost` 5.130's tree four
 * packages have install scripts: `sqlite3` (each site's database: built here), `re2` (only used by
 * `url-regex-safe` when `METASCRAPER_RE2=true`, else plain RegExp, and loaded in a try/catch),
 * `sharp` (its script only checks for the prebuilt `@img/sharp-*` packages, installed without
 * scripts; image resizing is optional in Ghost) and `dtrace-provider` (bunyan's optional DTrace
 * probes, nothing to build on Linux).
 */
export const NATIVE_BUILDS: readonly string[] = ['sqlite3'];

/** Settings of the installing user's npm that an install may keep: proxies, registry, CAs. Nothing else of the platform's environment. */
const NPM_NETWORK_VARS = [
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'npm_config_proxy',
  'npm_config_https_proxy',
  'npm_config_noproxy',
  'npm_config_registry',
  'npm_config_cafile',
  'NODE_EXTRA_CA_CERTS',
];

/**
 * The whole environment of an install step (npm, tar, node-gyp, the load check): `PATH`, a
 * throwaway `HOME`, npm's download cache (shared, so a second install reuses it) and, for npm,
 * the user's npm configuration file (registry and proxy settings; npm runs no package script, so no
 * package code reads it), plus proxy, registry and CA settings. No platform variable (keys,
 * database URLs, relay logins) reaches any of it.
 */
export function installEnv(home: string, base: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {
    PATH: base.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: home,
    npm_config_cache: base.npm_config_cache ?? path.join(homedir(), '.npm'),
    npm_config_update_notifier: 'false',
  };
  const userconfig = base.npm_config_userconfig ?? path.join(homedir(), '.npmrc');
  if (existsSync(userconfig)) env.npm_config_userconfig = userconfig;
  for (const name of NPM_NETWORK_VARS) if (base[name]) env[name] = base[name]!;
  return env;
}

/** The runtime cache: `ensure(spec)` answers an installed runtime, installing it at most once. */
export class RuntimeCache {
  readonly root: string;
  private readonly npm: string;
  private readonly staleLockMs: number;
  private readonly lockRefreshMs: number;
  private readonly lockPollMs: number;
  private readonly nativeBuilds: readonly string[];
  private readonly inFlight = new Map<string, Promise<InstalledRuntime>>();

  constructor(opts: RuntimeCacheOptions = {}) {
    this.root = opts.root ?? runtimeCacheRoot();
    this.npm = opts.npm ?? 'npm';
    this.staleLockMs = opts.staleLockMs ?? 60_000;
    this.lockRefreshMs = opts.lockRefreshMs ?? 5_000;
    this.lockPollMs = opts.lockPollMs ?? 500;
    this.nativeBuilds = opts.nativeBuilds ?? NATIVE_BUILDS;
  }

  dir(name: string, version: string): string {
    return path.join(this.root, name, version);
  }

  lockPath(name: string, version: string): string {
    return path.join(this.root, name, `${version}.lock`);
  }

  /** The installed runtime, when complete, built for this Node and of the expected integrity. */
  async installed(spec: RuntimeSpec): Promise<InstalledRuntime | null> {
    const dir = this.dir(spec.name, spec.version);
    let marker: InstalledRuntime;
    try {
      marker = JSON.parse(await readFile(path.join(dir, MARKER), 'utf8')) as InstalledRuntime;
    } catch {
      return null;
    }
    if (marker.integrity !== spec.integrity || marker.nodeAbi !== process.versions.modules) return null;
    return { ...marker, dir };
  }

  /** Installs the runtime unless the cache holds it; concurrent callers (any process) share one install. */
  ensure(spec: RuntimeSpec, onProgress?: ProgressFn): Promise<InstalledRuntime> {
    const key = `${spec.name}@${spec.version}`;
    const running = this.inFlight.get(key);
    if (running) return running;
    const p = this.ensureOnce(spec, onProgress ?? (() => undefined)).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, p);
    return p;
  }

  private async ensureOnce(spec: RuntimeSpec, onProgress: ProgressFn): Promise<InstalledRuntime> {
    const started = Date.now();
    const report = (phase: InstallPhase, detail: string) => onProgress({ phase, detail, elapsedMs: Date.now() - started });
    const hit = await this.installed(spec);
    if (hit) {
      report('cached', `${spec.name}@${spec.version} is in the runtime cache`);
      return hit;
    }
    const release = await this.lock(spec, report);
    try {
      // Another process may have finished it while this one waited.
      const done = await this.installed(spec);
      if (done) {
        report('cached', `${spec.name}@${spec.version} was installed by another process`);
        return done;
      }
      return await this.install(spec, report, started);
    } finally {
      await release();
    }
  }

  /**
   * Takes the version's lock: a directory created atomically, refreshed (mtime) by its holder. A
   * lock not refreshed for `staleLockMs` is renamed away (one taker wins the rename) and taken.
   */
  private async lock(spec: RuntimeSpec, report: (phase: InstallPhase, detail: string) => void): Promise<() => Promise<void>> {
    const lock = this.lockPath(spec.name, spec.version);
    await mkdir(path.dirname(lock), { recursive: true });
    let waiting = false;
    for (;;) {
      try {
        await mkdir(lock);
        await writeFile(
          path.join(lock, 'owner.json'),
          JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() }),
        );
        break;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      const age = await stat(lock).then(
        (s) => Date.now() - s.mtimeMs,
        () => 0,
      );
      if (age > this.staleLockMs) {
        const aside = `${lock}.stale-${randomBytes(4).toString('hex')}`;
        // Only one taker wins the rename; the others see ENOENT and try mkdir again.
        if (
          await rename(lock, aside).then(
            () => true,
            () => false,
          )
        )
          await rm(aside, { recursive: true, force: true });
        continue;
      }
      if (!waiting) {
        waiting = true;
        report('waiting_for_lock', `another install of ${spec.name}@${spec.version} is under way; waiting for it`);
      }
      await new Promise((r) => setTimeout(r, this.lockPollMs));
      // The holder finished: nothing to lock for (the caller finds the install).
      if (await this.installed(spec)) return async () => undefined;
    }
    const refresh = setInterval(() => {
      const now = new Date();
      utimes(lock, now, now).catch(() => undefined);
    }, this.lockRefreshMs);
    refresh.unref();
    return async () => {
      clearInterval(refresh);
      await rm(lock, { recursive: true, force: true });
    };
  }

  private async install(
    spec: RuntimeSpec,
    report: (phase: InstallPhase, detail: string) => void,
    started: number,
  ): Promise<InstalledRuntime> {
    const parent = path.join(this.root, spec.name);
    const staging = path.join(parent, `.staging-${spec.version}-${process.pid}-${randomBytes(4).toString('hex')}`);
    await this.removeOldStaging(parent, spec.version);
    await mkdir(staging, { recursive: true });
    // Every step runs with a clean environment and a HOME of its own, removed with the staging directory.
    const home = path.join(staging, '.home');
    await mkdir(home);
    const env = installEnv(home);
    try {
      report('pack', `downloading ${spec.name}@${spec.version} from the registry`);
      const packed = await run(this.npm, ['pack', `${spec.name}@${spec.version}`, '--json', '--pack-destination', staging], {
        cwd: staging,
        env,
      });
      const filename = (JSON.parse(packed.stdout) as { filename: string }[])[0]?.filename;
      const tarball = path.join(staging, filename ?? `${spec.name}-${spec.version}.tgz`);
      report('verify', `checking the tarball against ${spec.integrity.slice(0, 19)}…`);
      if (!(await integrityMatches(tarball, spec.integrity))) {
        throw new RuntimeInstallError(
          'runtime_integrity_mismatch',
          `the tarball of ${spec.name}@${spec.version} does not match the catalog's integrity`,
        );
      }
      report('extract', 'unpacking the release');
      const pkgDir = path.join(staging, 'package');
      await mkdir(pkgDir);
      await run('tar', ['-xzf', tarball, '-C', pkgDir, '--strip-components=1'], { env });
      await rm(tarball);
      // Development dependencies are never needed to run, and some are fetched from git hosts.
      const manifestPath = path.join(pkgDir, 'package.json');
      const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as Record<string, unknown>;
      delete manifest.devDependencies;
      await writeFile(manifestPath, JSON.stringify(manifest, null, 2));
      report('install', 'installing dependencies');
      let fetched = 0;
      let lastReport = 0;
      // A long install prints nothing at this log level for a while: a heartbeat keeps the detail moving.
      const heartbeat = setInterval(() => {
        lastReport = Date.now();
        report(
          'install',
          `installing dependencies: ${fetched} fetched, building (${Math.round((Date.now() - started) / 1000)} s)`,
        );
      }, 15_000);
      heartbeat.unref();
      await run(
        this.npm,
        // No dependency's install script runs (they are not covered by the catalog's digest): the few
        // native parts the runtime needs are built below.
        ['install', '--omit=dev', '--legacy-peer-deps', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=http'],
        { cwd: pkgDir, env },
        (line) => {
          if (!/ http fetch /.test(line)) return;
          fetched += 1;
          if (Date.now() - lastReport > 2_000) {
            lastReport = Date.now();
            report('install', `installing dependencies: ${fetched} fetched`);
          }
        },
      ).finally(() => clearInterval(heartbeat));
      const natives = this.nativeBuilds.filter((n) => existsSync(path.join(pkgDir, 'node_modules', n)));
      for (const name of natives) {
        if (await bindingExists(path.join(pkgDir, 'node_modules', name))) continue;
        report('build_native', `building the ${name} binding against this Node`);
        await buildNative(path.join(pkgDir, 'node_modules', name), env);
      }
      report('check', `loading ${natives.length ? natives.join(', ') : 'nothing native'}`);
      for (const name of natives) await run(process.execPath, ['-e', `require(${JSON.stringify(name)})`], { cwd: pkgDir, env });
      const marker: InstalledRuntime = {
        name: spec.name,
        version: spec.version,
        integrity: spec.integrity,
        dir: '',
        installedAt: new Date().toISOString(),
        installMs: Date.now() - started,
        nodeAbi: process.versions.modules,
      };
      await writeFile(path.join(pkgDir, MARKER), JSON.stringify(marker, null, 2));
      const final = this.dir(spec.name, spec.version);
      await rm(final, { recursive: true, force: true });
      await rename(pkgDir, final);
      report('done', `${spec.name}@${spec.version} installed in ${Math.round((Date.now() - started) / 1000)} s`);
      return { ...marker, dir: final };
    } catch (e) {
      if (e instanceof RuntimeInstallError) throw e;
      throw new RuntimeInstallError(
        'runtime_install_failed',
        `installing ${spec.name}@${spec.version} failed: ${(e as Error).message}`,
      );
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }

  /** Staging directories left by a crashed install of this version (this process holds the lock now). */
  private async removeOldStaging(parent: string, version: string): Promise<void> {
    const names = await readdir(parent).catch(() => [] as string[]);
    await Promise.all(
      names
        .filter((n) => n.startsWith(`.staging-${version}-`))
        .map((n) => rm(path.join(parent, n), { recursive: true, force: true })),
    );
  }
}

async function bindingExists(moduleDir: string): Promise<boolean> {
  const release = path.join(moduleDir, 'build', 'Release');
  const names = await readdir(release).catch(() => [] as string[]);
  return names.some((n) => n.endsWith('.node'));
}

/**
 * The node-gyp that ships inside npm (`NODE_GYP` overrides), and the directory holding this Node's
 * headers (`include/node/node.h`), so a native build needs nothing from the network.
 */
export function nativeToolchain(env: NodeJS.ProcessEnv = process.env): { nodeGyp: string; nodeDir: string | null } {
  const prefix = path.dirname(path.dirname(process.execPath));
  const candidates = [
    env.NODE_GYP,
    env.npm_execpath && path.join(path.dirname(path.dirname(env.npm_execpath)), 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
    path.join(prefix, 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
  ].filter((c): c is string => !!c);
  const nodeGyp = candidates.find((c) => existsSync(c));
  if (!nodeGyp) throw new Error(`node-gyp not found (looked at ${candidates.join(', ')}); set NODE_GYP`);
  const nodeDir = existsSync(path.join(prefix, 'include', 'node', 'node.h')) ? prefix : null;
  return { nodeGyp, nodeDir };
}

/** node-gyp in the package's directory: the package's build files run, with the install's clean environment. */
async function buildNative(moduleDir: string, env: Record<string, string>): Promise<void> {
  const { nodeGyp, nodeDir } = nativeToolchain();
  const args = [nodeGyp, 'rebuild'];
  if (nodeDir) args.push(`--nodedir=${nodeDir}`);
  await run(process.execPath, args, { cwd: moduleDir, env });
}

/** Runs a command; resolves with its output, rejects with its last lines on a non-zero exit. */
function run(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env: Record<string, string> },
  onLine?: (line: string) => void,
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'], env: opts.env });
    let stdout = '';
    let stderr = '';
    let partial = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => {
      const text = c.toString();
      stderr = (stderr + text).slice(-20_000);
      if (!onLine) return;
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) onLine(l);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve({ stdout, stderr });
      else
        reject(
          new Error(`${path.basename(cmd)} ${args[0]} exited with ${code}: ${stderr.trim().split('\n').slice(-5).join(' | ')}`),
        );
    });
  });
}
