import type * as moduleTypes from 'node:module';

/**
 * Two caches a workload's boot keeps beside its V8 code cache (compile-cache.ts; docs/decisions/
 * 0405-ghost-boot-caches.md), in the same preload: Node's module resolution of the runtime's release,
 * and the release's minifiers (terser, csso). Both only ever hold what the release alone decides
 * (it is mounted read-only and a release change starts a new cache directory), both are the site's
 * own (its process writes and reads them as its uid; the platform never reads them), and on any
 * error both behave as if they were not there.
 *
 * The functions here are stringified into the preload file: nothing outside their bodies is in scope.
 */

/** What the code cache hands the boot caches: its directory, its hash and its write schedule. */
export interface BootCacheHome {
  /** The per-Node-version and main-script subdirectory of the workload's cache directory. */
  here: string;
  /**
   * The runtime's release directory (`PLATFORM_RUNTIME_DIR`, its real path ending in the separator),
   * when the workload has one: the boot caches keep nothing else.
   */
  release?: string;
  /** The first 32 hex digits of the sha256 of the parts. */
  hash(...parts: string[]): string;
  /** Creates `here` (and removes other versions' subdirectories); false when it cannot. */
  prepare(): boolean;
  /** Runs `write` whenever the code cache writes its new entries (at exit, and after the start). */
  later(write: () => void): void;
}

type Loader = typeof moduleTypes & {
  _resolveFilename(request: string, parent: unknown, isMain: boolean, options?: unknown): string;
  _load(request: string, parent: unknown, isMain: boolean): unknown;
  _cache: Record<string, unknown>;
};

/**
 * Memoizes `Module._resolveFilename` for what the release asks of itself: a request whose parent
 * module and resolved file are both inside the release (`PLATFORM_RUNTIME_DIR`, its real path), keyed
 * by the parent's directory and the request (Node's own per-process key), only without `options` and
 * not for the main module; a relative or absolute request also only when its path does not leave the
 * release (a link from the site's content into the release is the site's and may change). The table
 * is kept in `resolve.json` of the cache directory (paths relative to the release), read at the start
 * and written with the code cache; it is dropped whole when Node's search paths or flags changed
 * (`NODE_PATH`, `execArgv`, `NODE_OPTIONS`). A cached file that is no longer there is resolved again
 * by Node. Off with `PLATFORM_RESOLVE_CACHE=off`.
 */
export function resolveCache(home: BootCacheHome): void {
  const release = home.release;
  if (!release || process.env.PLATFORM_RESOLVE_CACHE === 'off') return;
  const fs = require('node:fs') as typeof import('node:fs');
  const path = require('node:path') as typeof import('node:path');
  const Module = require('node:module') as Loader;
  const root = release.length > 1 ? release.slice(0, -1) : release;
  const inside = (p: string) => p.startsWith(release);
  const file = path.join(home.here, 'resolve.json');
  const identity = home.hash(release, process.env.NODE_PATH ?? '', process.execArgv.join('\0'), process.env.NODE_OPTIONS ?? '');
  const table = new Map<string, string>();
  try {
    const saved = JSON.parse(fs.readFileSync(file, 'utf8')) as { identity?: unknown; entries?: unknown };
    if (saved.identity === identity && Array.isArray(saved.entries))
      for (const e of saved.entries as unknown[]) {
        if (!Array.isArray(e) || e.length !== 3 || !e.every((s) => typeof s === 'string')) continue;
        const [dir, request, to] = (e as string[]).map((s, i) => (i === 1 ? s : path.join(release, s)));
        if ((dir === root || inside(dir)) && inside(to)) table.set(`${dir}\0${request}`, to);
      }
  } catch {
    // none yet, or unreadable: Node resolves everything
  }
  let dirty = false;
  const resolve = Module._resolveFilename;
  Module._resolveFilename = function (this: unknown, ...args: [string, unknown, boolean, unknown?]) {
    const [request, parent, isMain, options] = args;
    const from = (parent as { filename?: unknown } | null | undefined)?.filename;
    if (options !== undefined || isMain || typeof request !== 'string' || typeof from !== 'string' || !inside(from))
      return resolve.apply(this, args);
    const key = `${path.dirname(from)}\0${request}`;
    const hit = table.get(key);
    if (hit !== undefined) {
      try {
        if (Module._cache[hit] !== undefined || fs.statSync(hit, { throwIfNoEntry: false })?.isFile()) return hit;
      } catch {
        // unreadable: Node's answer
      }
      table.delete(key);
      dirty = true;
    }
    const to = resolve.apply(this, args);
    // A path (not a package name) is kept only when it does not pass through what is not the release.
    const named = !/^(\.\.?($|[\\/])|[\\/])/.test(request);
    if (typeof to === 'string' && inside(to) && (named || inside(path.resolve(path.dirname(from), request)))) {
      table.set(key, to);
      dirty = true;
    }
    return to;
  };
  home.later(() => {
    if (!dirty || !home.prepare()) return;
    dirty = false;
    const entries: string[][] = [];
    for (const [key, to] of table) {
      const cut = key.indexOf('\0');
      entries.push([path.relative(root, key.slice(0, cut)), key.slice(cut + 1), to.slice(release.length)]);
    }
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify({ identity, entries }));
    fs.renameSync(tmp, file);
  });
}

/**
 * Memoizes the release's minifiers: `terser.minify(input, options)` (a Promise) and
 * `csso.minify(css, options)` (a value) are functions of their arguments alone, so a result is kept
 * in `minify-<hash>.json` of the cache directory, named by the hash of the library's name and version,
 * the options and the input, and given back (as a Promise when the library's was) without running
 * the library, which is then not even loaded: `require` of either from inside the release answers a
 * stand-in that loads the library at the first use of anything but `minify`. Only plain JSON
 * arguments (strings, finite numbers, booleans, null, arrays and plain objects; no `nameCache`,
 * which terser changes) and results whose fields are all strings or null are kept; an error is the
 * library's own. Off with `PLATFORM_MINIFY_CACHE=off`.
 */
export function minifyMemo(home: BootCacheHome): void {
  const release = home.release;
  if (!release || process.env.PLATFORM_MINIFY_CACHE === 'off') return;
  const fs = require('node:fs') as typeof import('node:fs');
  const path = require('node:path') as typeof import('node:path');
  const Module = require('node:module') as Loader;
  type Result = Record<string, string | null>;
  type Minify = (...args: unknown[]) => unknown;
  const libraries = new Set(['terser', 'csso']);
  const plain = (v: unknown): boolean => {
    if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
    if (typeof v === 'number') return Number.isFinite(v);
    if (Array.isArray(v)) return v.every(plain);
    if (typeof v !== 'object' || Object.getPrototypeOf(v) !== Object.prototype) return false;
    return Object.values(v as object).every(plain);
  };
  const isResult = (r: unknown): r is Result =>
    typeof r === 'object' &&
    r !== null &&
    Object.getPrototypeOf(r) === Object.prototype &&
    Object.values(r as object).every((f) => f === null || typeof f === 'string');
  const versionOf = (name: string, from: string): string | undefined => {
    for (let dir = path.dirname(from); dir.startsWith(release); dir = path.dirname(dir)) {
      try {
        const p = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
        if (p.name === name && typeof p.version === 'string') return p.version;
      } catch {
        // no package.json here
      }
    }
    return undefined;
  };
  const standIn = (name: string, version: string, lib: () => Record<string | symbol, unknown>) => {
    const entry = (key: string) => path.join(home.here, `minify-${key}.json`);
    const store = (key: string, async: boolean, result: unknown) => {
      try {
        if (!isResult(result) || !home.prepare()) return;
        const tmp = `${entry(key)}.${process.pid}.tmp`;
        fs.writeFileSync(tmp, JSON.stringify({ async, result }));
        fs.renameSync(tmp, entry(key));
      } catch {
        // not kept: the next boot minifies again
      }
    };
    const minify = function (...args: unknown[]) {
      let key: string | undefined;
      try {
        const [input, options] = args;
        const changed = typeof options === 'object' && options !== null && 'nameCache' in options;
        if (args.length <= 2 && plain(input) && (options === undefined || plain(options)) && !changed) {
          key = home.hash(name, version, JSON.stringify(options ?? null), JSON.stringify(input));
          const hit = JSON.parse(fs.readFileSync(entry(key), 'utf8')) as { async?: unknown; result?: unknown };
          if (isResult(hit.result)) return hit.async === true ? Promise.resolve(hit.result) : hit.result;
        }
      } catch {
        // not kept yet, or unreadable
      }
      const real = lib();
      const out = (real.minify as Minify).apply(real, args);
      if (key === undefined) return out;
      const k = key;
      if (out instanceof Promise)
        return out.then((r: unknown) => {
          store(k, true, r);
          return r;
        });
      store(k, false, out);
      return out;
    };
    return new Proxy({} as Record<string | symbol, unknown>, {
      get: (_t, k) => (k === 'minify' ? minify : Reflect.get(lib(), k)),
      has: (_t, k) => Reflect.has(lib(), k),
      ownKeys: () => Reflect.ownKeys(lib()),
      getOwnPropertyDescriptor: (_t, k) => {
        const d = Reflect.getOwnPropertyDescriptor(lib(), k);
        return d && { ...d, ...(k === 'minify' && 'value' in d ? { value: minify } : {}), configurable: true };
      },
      set: (_t, k, v) => Reflect.set(lib(), k, v),
      defineProperty: (_t, k, d) => Reflect.defineProperty(lib(), k, d),
      deleteProperty: (_t, k) => Reflect.deleteProperty(lib(), k),
      getPrototypeOf: () => Reflect.getPrototypeOf(lib()),
    });
  };
  const answers = new Map<string, unknown>();
  const load = Module._load;
  Module._load = function (this: unknown, ...args: [string, unknown, boolean]) {
    const [request, parent, isMain] = args;
    if (!libraries.has(request)) return load.apply(this, args);
    let file: string;
    try {
      file = Module._resolveFilename(request, parent, isMain);
    } catch {
      return load.apply(this, args);
    }
    if (!file.startsWith(release)) return load.apply(this, args);
    let answer = answers.get(file);
    if (answer === undefined) {
      let loaded: Record<string | symbol, unknown> | undefined;
      const lib = () => (loaded ??= load.apply(this, args) as Record<string | symbol, unknown>);
      const version = versionOf(request, file);
      answer = version === undefined ? lib() : standIn(request, version, lib);
      answers.set(file, answer);
    }
    return answer;
  };
}
