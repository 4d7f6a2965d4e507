import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/**
 * Deliveries of one asset keep their order per webhook (decision 0101): a receiver that fails an
 * asset's `asset.created` must not get its `asset.processed` before `asset.created` went through.
 */
describe('asset webhook ordering', () => {
  let t: TestPlatform;
  let blobDir: string;
  let server: http.Server;
  let url: string;
  /** Every request in arrival order, with the answer it got. */
  const seen: { type: string; assetId: string; status: number; at: number }[] = [];
  /** asset key → how many `asset.created` requests to fail before answering 204. */
  const failCreated = new Map<string, number>([
    ['order/flaky.txt', 1],
    ['order/broken.txt', 99],
  ]);

  beforeAll(async () => {
    blobDir = await mkdtemp(path.join(tmpdir(), 'assets-hook-order-'));
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const e = JSON.parse(body) as { type: string; data: { asset_id: string; key: string } };
        const left = failCreated.get(e.data.key) ?? 0;
        const fail = e.type === 'asset.created' && left > 0;
        if (fail) failCreated.set(e.data.key, left - 1);
        seen.push({ type: e.type, assetId: e.data.asset_id, status: fail ? 500 : 204, at: Date.now() });
        res.writeHead(fail ? 500 : 204).end(fail ? 'not yet' : undefined);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    t = await startTestPlatform({
      ASSETS_BLOB_DIR: blobDir,
      OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
      ASSETS_WEBHOOK_RETRY_BASE_MS: '300',
      ASSETS_WEBHOOK_RETRY_MAX_MS: '600',
      ASSETS_WEBHOOK_MAX_ATTEMPTS: '3',
      ASSETS_WEBHOOK_POLL_MS: '100',
    });
  }, 120_000);
  afterAll(async () => {
    await t?.stop();
    await new Promise((r) => server?.close(r));
    await rm(blobDir, { recursive: true, force: true });
  });

  const upload = async (key: string, k: string) => {
    const fd = new FormData();
    fd.append('key', k);
    fd.append('file', new Blob([`bytes of ${k}`]), 'f.txt');
    const res = await fetch(`${t.bridgeUrl}/api/v1/assets/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    });
    const json = (await res.json()) as any;
    if (res.status !== 201) throw new Error(JSON.stringify(json));
    return json.data.id as string;
  };
  const until = async (what: string, ok: () => boolean, ms = 60_000) => {
    const end = Date.now() + ms;
    while (!ok()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(seen)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  it('asset.processed waits while asset.created is retried, then follows it; a given-up delivery lets the next one go', async () => {
    const { key } = await t.createKey();
    const made = await t.rest('POST', '/api/v1/assets/webhooks', {
      key,
      body: { url, event_types: ['asset.created', 'asset.processed'] },
    });
    expect(made.status).toBe(201);

    // flaky: asset.created fails once, then its retry succeeds; broken: every attempt fails
    // (three), so the delivery is given up; the others go through at once.
    const plain = [await upload(key, 'order/0.txt'), await upload(key, 'order/1.txt')];
    const flaky = await upload(key, 'order/flaky.txt');
    const broken = await upload(key, 'order/broken.txt');
    const all = [...plain, flaky, broken];
    const processed = (id: string) => seen.some((s) => s.assetId === id && s.type === 'asset.processed' && s.status === 204);
    await until('every asset processed', () => all.every(processed));
    const created = (id: string) => seen.filter((s) => s.assetId === id && s.type === 'asset.created').map((s) => s.status);
    expect(created(flaky)).toEqual([500, 204]);
    expect(created(broken)).toEqual([500, 500, 500]);
    for (const id of all) {
      const mine = seen.filter((s) => s.assetId === id);
      const firstProcessed = mine.findIndex((s) => s.type === 'asset.processed');
      const lastCreated = mine.map((s) => s.type).lastIndexOf('asset.created');
      // Nothing of asset.processed reached the receiver before the last asset.created attempt.
      expect(lastCreated).toBeGreaterThanOrEqual(0);
      expect(firstProcessed).toBeGreaterThan(lastCreated);
    }
  });
});
