import { existsSync } from 'node:fs';
import path from 'node:path';

let root: string | undefined;
/** The repository root (the folder holding package.json), whether running from dist/ or from source. */
export function projectRoot(): string {
  if (root) return root;
  let dir = __dirname;
  while (!existsSync(path.join(dir, 'package.json'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error('cannot find the project root (package.json)');
    dir = up;
  }
  root = dir;
  return dir;
}

/** The platform's data folder: `DATA_DIR` (default `.data`) from the project root. */
export function dataRoot(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(projectRoot(), env.DATA_DIR ?? '.data');
}
