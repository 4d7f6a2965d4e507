import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../core/paths';
import { importCircles, importsOf, sourceFiles } from './import-rules';

/**
 * The Assets area is a list of modules (docs/decisions/0290-assets-module-faces.md): each folder under
 * `subgraphs/assets/` is one module, and its `index.ts` is its face. A file of one module imports
 * another module only through that face; no files of the area import each other around a loop; and
 * no file reaches up to a file above its folder that imports back into it (the top of the area holds
 * its entry `index.ts`, the registry `modules.ts` and a kit that imports no module).
 */
const ROOT = projectRoot();
const AREA = 'subgraphs/assets';

const production = (): string[] =>
  sourceFiles(ROOT)
    .filter((f) => f.startsWith(`${AREA}/`) && !f.endsWith('.test.ts'))
    .sort();

/** The module of a file (its first folder under the area), or null for a file at the top of the area. */
const moduleOf = (file: string): string | null => {
  const parts = file.slice(AREA.length + 1).split('/');
  return parts.length > 1 ? parts[0] : null;
};

/** A relative import as the file it loads (`x.ts` or `x/index.ts`), or null outside the given files. */
const fileOf = (target: string, known: Set<string>): string | null =>
  [`${target}.ts`, `${target}/index.ts`].find((f) => known.has(f)) ?? null;

/** Each import between two files of the area: [importing file, imported file]. */
function areaImports(files: string[], read: (f: string) => string): Array<[string, string]> {
  const known = new Set(files);
  const out: Array<[string, string]> = [];
  for (const file of files) {
    for (const target of importsOf(file, read(file))) {
      const to = fileOf(target, known);
      if (to) out.push([file, to]);
    }
  }
  return out;
}

/** Imports from one module into another that do not go through the other's `index.ts`. */
export function bypassedFaces(files: string[], read: (f: string) => string): string[] {
  return areaImports(files, read)
    .filter(([from, to]) => {
      const target = moduleOf(to);
      return target !== null && target !== moduleOf(from) && to !== `${AREA}/${target}/index.ts`;
    })
    .map(([from, to]) => `${from} → ${to}`);
}

/**
 * Imports of a file in a folder above the importer that imports back (directly or through others)
 * into the importer's folder: a module leaning on the area's top, which leans on the module.
 */
export function arrowsBackUp(files: string[], read: (f: string) => string): string[] {
  const edges = new Map<string, string[]>();
  for (const [from, to] of areaImports(files, read)) edges.set(from, [...(edges.get(from) ?? []), to]);
  const reach = (start: string): Set<string> => {
    const seen = new Set<string>();
    const todo = [start];
    while (todo.length) for (const next of edges.get(todo.pop()!) ?? []) if (!seen.has(next) && seen.add(next)) todo.push(next);
    return seen;
  };
  const out: string[] = [];
  for (const [from, targets] of edges) {
    const dir = path.posix.dirname(from);
    for (const to of targets) {
      const above = path.posix.dirname(to);
      if (!dir.startsWith(`${above}/`)) continue;
      const branch = `${above}/${dir.slice(above.length + 1).split('/')[0]}/`;
      if ([...reach(to)].some((f) => f.startsWith(branch))) out.push(`${from} → ${to}`);
    }
  }
  return out;
}

describe('Assets modules', () => {
  const files = production();
  const read = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');

  it('a module imports another module only through its index.ts', () => {
    expect(bypassedFaces(files, read)).toEqual([]);
  });

  it('no import circle among the files of the area', () => {
    expect(importCircles(ROOT, files, read)).toEqual([]);
  });

  it('no arrow back up: no file imports a file above its folder that imports back into it', () => {
    expect(arrowsBackUp(files, read)).toEqual([]);
  });

  it('every module has an index.ts, and the top of the area is its entry, the registry and a kit that imports no module', () => {
    const dir = path.join(ROOT, AREA);
    const folders = readdirSync(dir).filter((n) => statSync(path.join(dir, n)).isDirectory() && n !== 'operations');
    expect(folders.filter((n) => !existsSync(path.join(dir, n, 'index.ts')))).toEqual([]);
    const kit = files.filter((f) => moduleOf(f) === null && ![`${AREA}/index.ts`, `${AREA}/modules.ts`].includes(f));
    const known = new Set(files);
    const kitImports = kit.flatMap((f) =>
      importsOf(f, read(f))
        .map((t) => fileOf(t, known))
        .filter((t): t is string => t !== null && moduleOf(t) !== null)
        .map((t) => `${f} → ${t}`),
    );
    expect(kitImports).toEqual([]);
  });

  it('finds a bypassed face and an arrow back up', () => {
    const fake: Record<string, string> = {
      [`${AREA}/a/index.ts`]: "export { x } from './x';",
      [`${AREA}/a/x.ts`]: "import { top } from '../top';\nexport const x = top;",
      [`${AREA}/b/y.ts`]: "import { x } from '../a/x';\nimport { x as x2 } from '../a';",
      [`${AREA}/top.ts`]: "import { y } from './b/y';\nexport const top = 1;",
    };
    const names = Object.keys(fake);
    expect(bypassedFaces(names, (f) => fake[f])).toEqual([`${AREA}/b/y.ts → ${AREA}/a/x.ts`, `${AREA}/top.ts → ${AREA}/b/y.ts`]);
    // top.ts imports b/y.ts, which imports a/: a/x.ts leaning on top.ts is an arrow back up.
    expect(arrowsBackUp(names, (f) => fake[f])).toEqual([`${AREA}/a/x.ts → ${AREA}/top.ts`]);
  });
});
