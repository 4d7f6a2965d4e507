import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { projectRoot } from '../core/paths';
import { buildOpenApi } from './openapi';
import { ROUTES } from './routes';

/** Writes schema/openapi.json from the route table; with `check`, only reports staleness. */
export async function writeOpenApi(check = false): Promise<string[]> {
  const file = path.join(projectRoot(), 'schema', 'openapi.json');
  const content = `${JSON.stringify(buildOpenApi(ROUTES), null, 2)}\n`;
  const current = await readFile(file, 'utf8').catch(() => '');
  if (current === content) return [];
  if (!check) await writeFile(file, content);
  return ['schema/openapi.json'];
}
