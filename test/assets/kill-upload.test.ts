import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Connection } from 'mongoose';
import { loadConfig } from '../../core/config';
import { connectMongo, ensureIndexes } from '../../core/mongo';
import { IdentityService } from '../../subgraphs/identity/service';

/**
 * `kill -9` of the platform (the built `platform start all`) in the middle of a streamed upload:
 * after a restart, no asset record and no blob remain (the staged bytes are swept). Uses dist/.
 */
const BIN = path.join(__dirname, '..', '..', 'bin', 'platform.js');
const id = randomBytes(4).toString('hex');
const base = loadConfig(process.env);
const dbUri = base.mongodbUri.replace(/\/[^/?]*(\?|$)/, `/t_${id}$1`);
let conn: Connection;
let blobDir: string;
let child: ChildProcess | undefined;

function startChild(): Promise<{ proc: ChildProcess; bridgeUrl: string }> {
  const proc = spawn(process.execPath, [BIN, 'start', 'all'], {
    env: {
      ...process.env,
      MONGODB_URI: dbUri,
      KAFKA_BROKERS: base.kafkaBrokers.join(','),
      KAFKA_TOPIC_PREFIX: `t${id}`,
      BRIDGE_PORT: '0',
      ROUTER_PORT: '0',
      CDN_PORT: '0',
      SUBGRAPH_BASE_PORT: '0',
      ASSETS_BLOB_DIR: blobDir,
      ASSETS_STAGING_STALE_MS: '300',
      LOG_LEVEL: 'silent',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let err = '';
    const timer = setTimeout(() => reject(new Error(`platform did not start: ${err}`)), 90_000);
    proc.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /REST bridge\s+(http:\/\/\S+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, bridgeUrl: m[1] });
      }
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`platform exited (${code}): ${err}`));
    });
  });
}

const kill9 = (proc: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    proc.once('exit', () => resolve());
    proc.kill('SIGKILL');
  });

async function files(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await files(p)));
    else out.push(p);
  }
  return out;
}

beforeAll(async () => {
  if (!existsSync(path.join(__dirname, '..', '..', 'dist', 'cli', 'main.js'))) throw new Error('run `npm run build` first');
  blobDir = await mkdtemp(path.join(tmpdir(), 'assets-kill-'));
  conn = await connectMongo(dbUri);
  await ensureIndexes(conn);
});
afterAll(async () => {
  if (child) await kill9(child);
  await conn.dropDatabase().catch(() => undefined);
  await conn.close();
  await rm(blobDir, { recursive: true, force: true });
});

it('kill -9 during an upload leaves no record and no blob after restart', async () => {
  let running = await startChild();
  child = running.proc;
  const { key } = await new IdentityService(conn).createApiKey({ accountSlug: `kill-${id}`, plan: 'pro' });

  // A multipart upload that sends 4 MiB of its file, then stalls: the platform is killed mid-stream.
  const boundary = `b${id}`;
  const url = new URL(`${running.bridgeUrl}/api/v1/assets/upload`);
  const req = http.request(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
  });
  req.on('error', () => undefined);
  req.write(`--${boundary}\r\nContent-Disposition: form-data; name="key"\r\n\r\nkilled/upload.bin\r\n`);
  req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="upload.bin"\r\n\r\n`);
  for (let i = 0; i < 4; i++) req.write(randomBytes(1024 * 1024));
  const deadline = Date.now() + 20_000;
  while ((await files(path.join(blobDir, '_staging'))).length === 0 && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 50));
  expect((await files(path.join(blobDir, '_staging'))).length).toBe(1);
  await kill9(running.proc);
  req.destroy();

  running = await startChild();
  child = running.proc;
  const until = Date.now() + 20_000;
  while ((await files(blobDir)).length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  expect(await files(blobDir)).toEqual([]);
  expect(await conn.collection('assets').countDocuments({})).toBe(0);
  const list = await fetch(`${running.bridgeUrl}/api/v1/assets`, { headers: { authorization: `Bearer ${key}` } });
  expect(((await list.json()) as any).data.total).toBe(0);
}, 240_000);
