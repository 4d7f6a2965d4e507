import { projectRoot } from '../../core/paths';
import { importCircles, sourceFiles } from './import-rules';

/**
 * No two production files import each other, directly or around a loop: a circle makes the load
 * order decide what a module sees at start (an import that is still `undefined`), and ties files
 * that should be readable one at a time. Type-only imports count too (a circle of types is still
 * one knot of files). Tests and the files under `test/` are not production code.
 */
const production = () => sourceFiles(projectRoot()).filter((f) => !f.startsWith('test/') && !f.endsWith('.test.ts'));

const key = (circle: string[]) => circle.join(' → ');

describe('import circles', () => {
  it('no production file is part of an import circle', () => {
    expect(importCircles(projectRoot(), production()).map(key)).toEqual([]);
  });

  it('finds direct, longer and type-only circles, and nothing in a chain', () => {
    const files: Record<string, string> = {
      'a.ts': "import { b } from './b';",
      'b.ts': "import type { A } from './a';",
      'c.ts': "import { d } from './d';",
      'd.ts': "export { e } from './e';",
      'e.ts': "const c = await import('./c');",
      'f.ts': "import { a } from './a';\nimport { g } from './dir';",
      'dir/index.ts': "import x from 'zod';",
    };
    expect(importCircles('/virtual', Object.keys(files), (f) => files[f])).toEqual([
      ['a.ts', 'b.ts'],
      ['c.ts', 'd.ts', 'e.ts'],
    ]);
  });
});
