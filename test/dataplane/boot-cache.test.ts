import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { compileCacheEnv, compileCacheFile } from '../../dataplane/runtimes/compile-cache';

/**
 * The boot caches beside the code cache (docs/decisions/0405-ghost-boot-caches.md): the resolution
 * cache answers what Node's resolution answers, only for the release's own requests, and gives way to
 * Node when a cached file is gone; the minifiers' memo gives back the library's own result without
 * running (or loading) the library again.
 */
describe('data plane boot caches', () => {
  let work: string;
  let preload: string;
  let release: string;
  let content: string;
  let cacheDir: string;
  let calls: string;
  const put = (file: string, text: string) => {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
  };
  beforeEach(() => {
    work = mkdtempSync(path.join(tmpdir(), 'boot-cache-'));
    preload = compileCacheFile(path.join(work, 'preload'));
    release = path.join(work, 'release');
    content = path.join(work, 'site', 'content');
    cacheDir = path.join(work, 'site', 'compile-cache');
    calls = path.join(work, 'calls');
    put(path.join(release, 'node_modules', 'dep', 'package.json'), '{"name":"dep","main":"main.js"}');
    put(path.join(release, 'node_modules', 'dep', 'main.js'), 'exports.answer = 42;\n');
    put(path.join(release, 'node_modules', 'dep', 'other.js'), 'exports.answer = 7;\n');
    // The site's own code (an adapter in its content) and a theme linked from the release.
    put(path.join(content, 'adapter.js'), `module.exports = require(${JSON.stringify(path.join(release, 'lib', 'util.js'))});\n`);
    put(path.join(release, 'themes', 'casper', 'helper.js'), "module.exports = require('dep').answer;\n");
    mkdirSync(path.join(content, 'themes'), { recursive: true });
    symlinkSync(path.join(release, 'themes', 'casper'), path.join(content, 'themes', 'casper'), 'dir');
    put(path.join(release, 'lib', 'util.js'), 'module.exports = "util";\n');
    put(
      path.join(release, 'lib', 'a.js'),
      [
        "const dep = require('dep');",
        'module.exports = {',
        '  answer: dep.answer,',
        "  resolved: require.resolve('dep'),",
        `  adapter: require(${JSON.stringify(path.join(content, 'adapter.js'))}),`,
        `  theme: require(${JSON.stringify(path.join(content, 'themes', 'casper', 'helper.js'))}),`,
        '};',
      ].join('\n'),
    );
    const fake = (name: string, main: string, body: string) => {
      put(path.join(release, 'node_modules', name, 'package.json'), JSON.stringify({ name, version: '5.0.0', main }));
      put(
        path.join(release, 'node_modules', name, main),
        `const fs = require('fs');\nfs.appendFileSync(process.env.CALLS, 'load ${name}\\n');\nexports.other = 'other';\n${body}\n`,
      );
    };
    fake(
      'terser',
      'dist/bundle.js',
      "exports.minify = async (code, o) => { fs.appendFileSync(process.env.CALLS, 'terser\\n'); return { code: code.replace(/\\s+/g, '') + JSON.stringify(o ?? null) }; };",
    );
    fake(
      'csso',
      'cjs/index.cjs',
      "exports.minify = (css) => { fs.appendFileSync(process.env.CALLS, 'csso\\n'); return { css: css.trim(), map: null }; };",
    );
    put(
      path.join(release, 'index.js'),
      [
        "const a = require('./lib/a');",
        '(async () => {',
        "  const terser = require('terser');",
        "  const csso = require('csso');",
        "  const minified = terser.minify('let  x = 1;');",
        "  const t = [await minified, await terser.minify('let  x = 1;', { mangle: false })];",
        "  const c = csso.minify(' a { b: c } ');",
        "  const sync = !(c instanceof Promise) && minified instanceof Promise && typeof terser.minify === 'function';",
        '  console.log(JSON.stringify({ ...a, t, c, sync }));',
        '})();',
      ].join('\n'),
    );
    writeFileSync(calls, '');
  });
  afterEach(() => rmSync(work, { recursive: true, force: true }));

  const run = (env: Record<string, string> = compileCacheEnv(preload, cacheDir, release)) =>
    JSON.parse(
      execFileSync(process.execPath, [path.join(release, 'index.js')], {
        env: { PATH: process.env.PATH ?? '', CALLS: calls, ...env },
        encoding: 'utf8',
      }),
    ) as Record<string, unknown>;
  const tableFile = () => {
    const [own] = readdirSync(cacheDir);
    return path.join(cacheDir, own, 'resolve.json');
  };
  const table = () => JSON.parse(readFileSync(tableFile(), 'utf8')) as { identity: string; entries: string[][] };
  const called = () => readFileSync(calls, 'utf8').split('\n').filter(Boolean);

  it('answers what Node answers, from the table the next time, and gives way to Node when a cached file is gone', () => {
    const plain = run({});
    expect(plain).toMatchObject({
      answer: 42,
      resolved: path.join(release, 'node_modules', 'dep', 'main.js'),
      adapter: 'util',
      theme: 42,
    });
    expect(run()).toEqual(plain);
    expect(run()).toEqual(plain);
    const { identity, entries } = table();
    expect(entries).toEqual(
      expect.arrayContaining([
        ['', './lib/a', 'lib/a.js'],
        ['lib', 'dep', 'node_modules/dep/main.js'],
        ['themes/casper', 'dep', 'node_modules/dep/main.js'],
      ]),
    );

    // The table is what a start goes by: pointed at another file of the release, `dep` is that file.
    const to = (file: string) => entries.map(([dir, request, f]) => [dir, request, request === 'dep' ? file : f]);
    writeFileSync(tableFile(), JSON.stringify({ identity, entries: to('node_modules/dep/other.js') }));
    expect(run()).toMatchObject({ answer: 7, theme: 7, resolved: path.join(release, 'node_modules', 'dep', 'other.js') });

    // A cached file that is gone: Node resolves again, and the table follows.
    rmSync(path.join(release, 'node_modules', 'dep', 'other.js'));
    expect(run()).toEqual(plain);
    expect(table().entries).toEqual(expect.arrayContaining([['lib', 'dep', 'node_modules/dep/main.js']]));

    // Another set of Node flags (a new identity) starts the table over.
    writeFileSync(tableFile(), JSON.stringify({ identity: 'other', entries: to('node_modules/dep/gone.js') }));
    expect(run()).toEqual(plain);
  });

  it('never keeps a resolution from or into what is not the release', () => {
    run();
    const { entries } = table();
    expect(entries.length).toBeGreaterThan(3);
    for (const [dir, request, to] of entries) {
      for (const p of [dir, to]) expect(path.resolve(release, p).startsWith(`${release}${path.sep}`) || p === '').toBe(true);
      expect(request).not.toContain(content);
    }
    // The adapter (the site's content) asked for a release file: not kept, nor the release's request of it.
    expect(entries.some(([, request]) => request.endsWith('util.js'))).toBe(false);
    expect(entries.some(([, request]) => request.endsWith('adapter.js'))).toBe(false);
    // Off by its switch, or without the release's directory.
    rmSync(cacheDir, { recursive: true });
    run({ ...compileCacheEnv(preload, cacheDir, release), PLATFORM_RESOLVE_CACHE: 'off' });
    expect(readdirSync(path.join(cacheDir, readdirSync(cacheDir)[0]))).not.toContain('resolve.json');
    rmSync(cacheDir, { recursive: true });
    run(compileCacheEnv(preload, cacheDir));
    expect(readdirSync(path.join(cacheDir, readdirSync(cacheDir)[0]))).not.toContain('resolve.json');
  });

  it('gives back the minifiers’ own results without running or loading them again', () => {
    const plain = run({});
    expect(plain).toMatchObject({
      t: [{ code: 'letx=1;null' }, { code: 'letx=1;{"mangle":false}' }],
      c: { css: 'a { b: c }', map: null },
      sync: true,
    });
    const unmemoized = ['load terser', 'load csso', 'terser', 'terser', 'csso'];
    expect(called()).toEqual(unmemoized);
    // With the memo, a library loads at its first call.
    writeFileSync(calls, '');
    const once = ['load terser', 'terser', 'terser', 'load csso', 'csso'];
    expect(run()).toEqual(plain);
    expect(called()).toEqual(once);
    // Kept: the same results, and neither library runs nor even loads.
    expect(run()).toEqual(plain);
    expect(called()).toEqual(once);
    const [own] = readdirSync(cacheDir);
    expect(readdirSync(path.join(cacheDir, own)).filter((f) => f.startsWith('minify-'))).toHaveLength(3);

    // Another input is minified by the library.
    const index = path.join(release, 'index.js');
    writeFileSync(index, readFileSync(index, 'utf8').replace("' a { b: c } '", "' a { b: d } '"));
    writeFileSync(calls, '');
    expect(run()).toMatchObject({ c: { css: 'a { b: d }', map: null } });
    expect(called()).toEqual(['load csso', 'csso']);

    // Off by its switch.
    writeFileSync(calls, '');
    expect(run({ ...compileCacheEnv(preload, cacheDir, release), PLATFORM_MINIFY_CACHE: 'off' })).toMatchObject({ sync: true });
    expect(called()).toEqual(unmemoized);
  });
});
