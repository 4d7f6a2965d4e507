import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Edge, type EdgeEngineName, type EdgeOptions } from '../../dataplane/edge';
import { ensureNginxInstalled, nginxBinary } from '../../infra/nginx';

/** The engines the edge tests run against (docs/decisions/0310-nginx-edge-engine.md). */
export const EDGE_ENGINES: EdgeEngineName[] = ['node', 'nginx'];

/** An edge with `engine` (nginx installed from the pinned package if needed, in a folder of its own). */
export async function edgeWith(engine: EdgeEngineName, opts: EdgeOptions = {}): Promise<Edge> {
  if (engine === 'node') return new Edge({ ...opts, engine });
  await ensureNginxInstalled();
  // Removed when the edge closes (ephemeral).
  const prefix = mkdtempSync(path.join(tmpdir(), 'edge-nginx-'));
  return new Edge({ ...opts, engine, nginx: { binary: nginxBinary(), prefix, ephemeral: true } });
}
