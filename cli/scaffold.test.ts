import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { newRoute } from './scaffold';

/** `npm run new:route AREA/MODULE …` writes into the module's routes.ts (docs/decisions/0180-assets-modules.md). */
describe('new:route with a module', () => {
  let root: string;
  const empty = "import type { AnyRoute } from '../../../core/rest-route';\n\nexport const xRoutes: AnyRoute[] = [\n];\n";

  beforeEach(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'scaffold-'));
    await mkdir(path.join(root, 'subgraphs', 'assets', 'collections'), { recursive: true });
    await writeFile(path.join(root, 'subgraphs', 'assets', 'routes.ts'), empty);
    await writeFile(path.join(root, 'subgraphs', 'assets', 'collections', 'routes.ts'), empty);
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it("appends the row to the module's routes.ts and the document to the area's operations/", async () => {
    const written = await newRoute('assets/collections', 'GET', '/api/v1/assets/collections/{collectionID}/stats', root);
    expect(written).toEqual([
      'subgraphs/assets/operations/get-collections-stats.graphql',
      'subgraphs/assets/collections/routes.ts',
    ]);
    const rows = await readFile(path.join(root, 'subgraphs', 'assets', 'collections', 'routes.ts'), 'utf8');
    expect(rows).toContain("path: '/api/v1/assets/collections/{collectionID}/stats'");
    expect(rows.trimEnd().endsWith('];')).toBe(true);
    expect(await readFile(path.join(root, 'subgraphs', 'assets', 'routes.ts'), 'utf8')).toBe(empty);
  });

  it('keeps AREA alone working, and refuses a module without routes.ts', async () => {
    expect(await newRoute('assets', 'POST', '/api/v1/assets/things', root)).toEqual([
      'subgraphs/assets/operations/post-assets-things.graphql',
      'subgraphs/assets/routes.ts',
    ]);
    await expect(newRoute('assets/nothing', 'GET', '/api/v1/assets/x', root)).rejects.toThrow(
      'subgraphs/assets/nothing/routes.ts does not exist',
    );
  });
});
