import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { compileCacheEnv, compileCacheFile } from '../../dataplane/runtimes/compile-cache';

/**
 * The workloads' V8 code cache (docs/decisions/0335-ghost-wake-time.md): a module loaded through it
 * sees what Node's own loader gives it, the second start takes its bytecode from the cache, and a
 * changed module or another main script is compiled afresh.
 */
describe('data plane compile cache', () => {
  let work: string;
  let preload: string;
  beforeEach(() => {
    work = mkdtempSync(path.join(tmpdir(), 'compile-cache-'));
    preload = compileCacheFile(path.join(work, 'preload'));
    const app = path.join(work, 'app');
    mkdirSync(path.join(app, 'lib'), { recursive: true });
    mkdirSync(path.join(app, 'node_modules', 'dep'), { recursive: true });
    writeFileSync(path.join(app, 'node_modules', 'dep', 'package.json'), '{"name":"dep","main":"main.js"}');
    writeFileSync(path.join(app, 'node_modules', 'dep', 'main.js'), 'exports.answer = () => 42;\n');
    writeFileSync(path.join(app, 'lib', 'esm.mjs'), 'export const esm = "esm";\n');
    writeFileSync(
      path.join(app, 'lib', 'mod.js'),
      [
        "const dep = require('dep');",
        'module.exports = {',
        '  answer: dep.answer(),',
        '  file: __filename,',
        '  dir: __dirname,',
        "  resolved: require.resolve('dep'),",
        '  isMain: require.main === module,',
        '  thisIsExports: this === module.exports,',
        "  cached: Object.keys(require.cache).some((k) => k.endsWith('main.js')),",
        '};',
      ].join('\n'),
    );
    writeFileSync(path.join(app, 'lib', 'dynamic.js'), "module.exports = () => import('./esm.mjs');\n");
    writeFileSync(
      path.join(app, 'index.js'),
      [
        "const m = require('./lib/mod');",
        "require('./lib/dynamic')().then((e) => console.log(JSON.stringify({ ...m, esm: e.esm, main: require.main === module })));",
      ].join('\n'),
    );
  });
  afterEach(() => rmSync(work, { recursive: true, force: true }));

  const run = (cacheDir: string) =>
    JSON.parse(
      execFileSync(process.execPath, [path.join(work, 'app', 'index.js')], {
        env: { PATH: process.env.PATH ?? '', ...compileCacheEnv(preload, cacheDir) },
        encoding: 'utf8',
      }),
    ) as Record<string, unknown>;
  const entries = (cacheDir: string) => readdirSync(cacheDir).flatMap((d) => readdirSync(path.join(cacheDir, d)));
  /** Each entry's inode: an entry V8 rejected would be written again (a new file renamed into place). */
  const inodes = (cacheDir: string) =>
    readdirSync(cacheDir).flatMap((d) => readdirSync(path.join(cacheDir, d)).map((f) => statSync(path.join(cacheDir, d, f)).ino));

  it('gives a module what Node gives it, writes its bytecode at exit, and takes it from there the next time', () => {
    const cacheDir = path.join(work, 'site', 'compile-cache');
    const expected = {
      answer: 42,
      file: path.join(work, 'app', 'lib', 'mod.js'),
      dir: path.join(work, 'app', 'lib'),
      resolved: path.join(work, 'app', 'node_modules', 'dep', 'main.js'),
      isMain: false,
      thisIsExports: true,
      cached: true,
      esm: 'esm',
      main: true,
    };
    const plain = JSON.parse(
      execFileSync(process.execPath, [path.join(work, 'app', 'index.js')], { encoding: 'utf8' }),
    ) as Record<string, unknown>;
    expect(plain).toEqual(expected);
    expect(run(cacheDir)).toEqual(expected);
    // lib/mod.js and dep/main.js; not the main script, nor the module that uses import().
    expect(entries(cacheDir)).toHaveLength(2);
    const first = inodes(cacheDir);
    expect(run(cacheDir)).toEqual(expected);
    expect(inodes(cacheDir)).toEqual(first);

    // A changed module is a new entry; the unchanged one is still taken from the cache.
    writeFileSync(path.join(work, 'app', 'node_modules', 'dep', 'main.js'), 'exports.answer = () => 43;\n');
    expect(run(cacheDir)).toEqual({ ...expected, answer: 43 });
    expect(entries(cacheDir)).toHaveLength(3);
  });

  it('is off without its directory, and starts over for another main script (a release change)', () => {
    const cacheDir = path.join(work, 'site', 'compile-cache');
    expect(run('')).toMatchObject({ answer: 42 });
    expect(readdirSync(work)).not.toContain('site');
    run(cacheDir);
    const [before] = readdirSync(cacheDir);
    const moved = path.join(work, 'app2');
    execFileSync('cp', ['-r', path.join(work, 'app'), moved]);
    execFileSync(process.execPath, [path.join(moved, 'index.js')], {
      env: { PATH: process.env.PATH ?? '', ...compileCacheEnv(preload, cacheDir) },
    });
    const after = readdirSync(cacheDir);
    expect(after).toHaveLength(1);
    expect(after[0]).not.toBe(before);
  });
});
