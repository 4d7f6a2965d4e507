import type * as moduleTypes from 'node:module';
import type * as vmTypes from 'node:vm';
import { preloadFile } from '../supervisor-preload';
import { type BootCacheHome, minifyMemo, resolveCache } from './boot-cache';

/**
 * A V8 code cache for a Node workload's CommonJS modules (docs/decisions/0335-ghost-wake-time.md), as
 * a preload (`node --require <file>`): Node 22's `NODE_COMPILE_CACHE` for the Node 20 the workloads
 * run on, which has none. A sleeping site's wake compiles some 3,900 modules of Ghost again; with the
 * cache, V8 takes each module's bytecode from the data it produced last time (`vm.Script`'s
 * `cachedData`, checked by V8 against the source and its own version and flags: stale data is
 * rejected, and the module compiles as without it).
 *
 * The cache lives in the directory named by `PLATFORM_COMPILE_CACHE` (the workload's own, which it
 * writes as its own uid), one file per module, named by the hash of its path and source, under a
 * subdirectory per Node version and main script (a release change starts a new one and removes the
 * old). New entries are written when the process exits (a sleeping site's clean stop) and once a
 * while after the start (`writeAfterMs`, for a process that never exits cleanly): after the boot
 * and the first pages have run, so the bytecode of the functions they called is in them.
 *
 * Left to Node's own loader: the main module, a module that is not CommonJS, one that uses
 * `import()` (its referrer would need an experimental `vm` option) and one V8 will not compile as
 * a script (Node then tries it as an ES module).
 *
 * Answers what the boot caches beside it (boot-cache.ts) need: its directory and write schedule.
 */
export function compileCache(writeAfterMs: number[]): BootCacheHome | undefined {
  const dir = process.env.PLATFORM_COMPILE_CACHE;
  if (!dir) return undefined;
  const fs = require('node:fs') as typeof import('node:fs');
  const path = require('node:path') as typeof import('node:path');
  const crypto = require('node:crypto') as typeof import('node:crypto');
  const vm = require('node:vm') as typeof vmTypes;
  const Module = require('node:module') as typeof moduleTypes & {
    prototype: { _compile(content: string, filename: string, format?: string): unknown };
    wrap(source: string): string;
    _resolveFilename(request: string, parent: unknown, isMain: boolean, options?: unknown): string;
    _resolveLookupPaths(request: string, parent: unknown): string[] | null;
    _extensions: unknown;
    _cache: unknown;
  };
  const hash = (...parts: string[]) => {
    const h = crypto.createHash('sha256');
    for (const p of parts) h.update(p).update('\0');
    return h.digest('hex').slice(0, 32);
  };
  const own = hash(process.version, process.versions.v8, process.argv[1] ?? '');
  const here = path.join(dir, own);
  const pending: { file: string; script: vmTypes.Script }[] = [];
  const compile = Module.prototype._compile;
  Module.prototype._compile = function (this: NodeJS.Module, content: string, filename: string, format?: string) {
    if (
      (format !== undefined && format !== 'commonjs') ||
      process.mainModule === this ||
      !/\.c?js$/.test(filename) ||
      content.includes('import(')
    )
      return compile.call(this, content, filename, format);
    const file = path.join(here, hash(filename, content));
    let cachedData: Buffer | undefined;
    try {
      cachedData = fs.readFileSync(file);
    } catch {
      // not cached yet
    }
    let script: vmTypes.Script;
    try {
      script = new vm.Script(Module.wrap(content.replace(/^#!.*/, '')), { filename, cachedData });
    } catch {
      return compile.call(this, content, filename, format);
    }
    if (cachedData === undefined || script.cachedDataRejected) pending.push({ file, script });
    const fn = script.runInThisContext({ displayErrors: true }) as (...a: unknown[]) => unknown;
    // What Node's own `makeRequireFunction` gives a module (arrows: `this` is the module).
    const req = ((id: string) => this.require(id)) as NodeJS.Require;
    req.resolve = Object.assign(
      (request: string, options?: { paths?: string[] }) => Module._resolveFilename(request, this, false, options),
      { paths: (request: string) => Module._resolveLookupPaths(request, this) },
    );
    req.main = process.mainModule;
    req.extensions = Module._extensions as NodeJS.Require['extensions'];
    req.cache = Module._cache as NodeJS.Require['cache'];
    return fn.call(this.exports, this.exports, req, this, filename, path.dirname(filename));
  };
  const prepare = () => {
    try {
      fs.mkdirSync(here, { recursive: true, mode: 0o700 });
      for (const d of fs.readdirSync(dir)) if (d !== own) fs.rmSync(path.join(dir, d), { recursive: true, force: true });
      return true;
    } catch {
      // a full disk or a read-only directory: the next start compiles as without a cache
      return false;
    }
  };
  const writers: (() => void)[] = [];
  writers.push(() => {
    const batch = pending.splice(0);
    if (batch.length === 0 || !prepare()) return;
    for (const { file, script } of batch) {
      const tmp = `${file}.${process.pid}.tmp`;
      fs.writeFileSync(tmp, script.createCachedData());
      fs.renameSync(tmp, file);
    }
  });
  const write = () => {
    for (const w of writers)
      try {
        w();
      } catch {
        // a full disk: the next start does without what was not written
      }
  };
  for (const ms of writeAfterMs) setTimeout(write, ms).unref();
  process.once('exit', write);
  let release: string | undefined;
  try {
    const runtime = process.env.PLATFORM_RUNTIME_DIR;
    if (runtime) release = fs.realpathSync(runtime).replace(/\/?$/, path.sep);
  } catch {
    // no such directory: the boot caches stay off
  }
  return { here, release, hash, prepare, later: (w) => writers.push(w) };
}

/** When the cache's new entries are written besides at exit: once the boot and first pages have run. */
export const COMPILE_CACHE_WRITES_MS = [60_000];

/**
 * The workload's environment that turns the cache on, kept in `dir` (the workload's own, writable);
 * with `release` (the runtime's directory, read-only to the workload), the boot caches too.
 */
export function compileCacheEnv(preload: string, dir: string, release?: string): Record<string, string> {
  return {
    NODE_OPTIONS: `--require ${JSON.stringify(preload)}`,
    PLATFORM_COMPILE_CACHE: dir,
    ...(release ? { PLATFORM_RUNTIME_DIR: release } : {}),
  };
}

/** The code cache and the boot caches as a preload file (its own, in the platform's private preload directory). */
export function compileCacheFile(dir?: string): string {
  return preloadFile(
    'platform-compile-cache',
    [
      "'use strict';",
      `const home = (${compileCache.toString()})(${JSON.stringify(COMPILE_CACHE_WRITES_MS)});`,
      `if (home) {\n(${resolveCache.toString()})(home);\n(${minifyMemo.toString()})(home);\n}`,
      '',
    ].join('\n'),
    dir,
  );
}
