import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startPlatform, type Platform } from '../app/platform';
import { loadConfig } from '../core/config';

/** A whole platform for one benchmark run: its own database, topic prefix and blob directory. */
export interface BenchPlatform {
  platform: Platform;
  /** Random per run: names the database (`bench_<id>`), the topic prefix and the bench's account. */
  id: string;
  /** A scratch directory (the blobs live in `<dir>/blobs`); removed by `stop`. */
  dir: string;
  bridge: string;
  /** Drops the run's database, stops the platform and removes `dir`. */
  stop(): Promise<void>;
}

/**
 * Starts the platform in-process on free ports against the engines of MONGODB_URI / KAFKA_BROKERS,
 * isolated from every other run; `env` adds or overrides settings (e.g. a rate limit).
 */
export async function startBenchPlatform(label: string, env: Record<string, string> = {}): Promise<BenchPlatform> {
  const id = randomBytes(4).toString('hex');
  const dir = await mkdtemp(path.join(tmpdir(), `${label}-`));
  const base = loadConfig(process.env);
  const config = loadConfig({
    ...process.env,
    LOG_LEVEL: 'warn',
    ASSETS_BLOB_DIR: path.join(dir, 'blobs'),
    MONGODB_URI: base.mongodbUri.replace(/\/[^/?]*(\?|$)/, `/bench_${id}$1`),
    ...env,
  });
  const platform = await startPlatform({
    config,
    bridgePort: 0,
    routerPort: 0,
    cdnPort: 0,
    subgraphBasePort: 0,
    topicPrefix: `bench${id}`,
  });
  return {
    platform,
    id,
    dir,
    bridge: platform.bridgeUrl!,
    async stop() {
      await platform.conn.dropDatabase().catch(() => undefined);
      await platform.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The status of `GET /` for `host` through the edge at `edgeUrl` (0 when the connection fails). */
export function statusViaEdge(edgeUrl: string, host: string): Promise<number> {
  const u = new URL(edgeUrl);
  return new Promise((resolve) => {
    const req = http.request({ host: u.hostname, port: u.port, path: '/', headers: { host }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.end();
  });
}
