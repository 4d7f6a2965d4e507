import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Connection } from 'mongoose';
import { IdentityService } from '../../subgraphs/identity/service';
import { assertBuilt, childPlatformScope } from '../support/child-platform';

/**
 * `kill -9` of the platform (the built `platform start all`) in the middle of a streamed upload:
 * after a restart, no asset record and no blob remain (the staged bytes are swept). Uses dist/.
 */
const scope = childPlatformScope();
const { id } = scope;
let conn: Connection;
let blobDir: string;

const startChild = () => scope.start({ env: { ASSETS_BLOB_DIR: blobDir, ASSETS_STAGING_STALE_MS: '300' } });

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
  assertBuilt();
  blobDir = await mkdtemp(path.join(tmpdir(), 'assets-kill-'));
  conn = await scope.connect({ indexes: true });
});
afterAll(async () => {
  await scope.cleanup();
  await rm(blobDir, { recursive: true, force: true });
});

it('kill -9 during an upload leaves no record and no blob after restart', async () => {
  let running = await startChild();
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
  await running.kill();
  req.destroy();

  running = await startChild();
  const until = Date.now() + 20_000;
  while ((await files(blobDir)).length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  expect(await files(blobDir)).toEqual([]);
  expect(await conn.collection('assets').countDocuments({})).toBe(0);
  const list = await fetch(`${running.bridgeUrl}/api/v1/assets`, { headers: { authorization: `Bearer ${key}` } });
  expect(((await list.json()) as any).data.total).toBe(0);
}, 240_000);
