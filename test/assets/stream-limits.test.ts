import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { type Harness, startHarness } from './harness';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const MiB = 1024 ** 2;
const QUOTA = 64 * 1024;

/**
 * Limits hold while the bytes stream (decision 0098): a body is cut at the first byte past its
 * limit — the answer comes while the client is still sending — quota is reserved before a
 * session's first byte, and the content policy cannot promise more than the plan's quota.
 */
describe('assets limits enforced while bytes stream', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ ASSETS_QUOTA_BYTES_FREE: String(QUOTA) });
  });
  afterAll(async () => h.close());
  const local = (url: string) => new URL(url.replace(/^https?:\/\/[^/]+/, h.bridgeUrl));

  /**
   * Sends `head`, then keeps the request open without ending it; resolves with the status the
   * server answers (the server must answer before the body ends), or rejects after 8 s.
   */
  const answerBeforeEnd = (url: URL, method: string, headers: Record<string, string>, head: Buffer) =>
    new Promise<{ status: number; body: any }>((resolve, reject) => {
      const req = request(url, { method, headers: { ...headers, 'transfer-encoding': 'chunked' } }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => {
          clearTimeout(timer);
          req.destroy();
          resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : null });
        });
      });
      req.on('error', () => undefined);
      const timer = setTimeout(() => {
        req.destroy();
        reject(new Error('no answer while the body was still being sent'));
      }, 8000);
      req.write(head);
      // More bytes keep coming slowly; the request is never ended by the client.
      const drip = setInterval(() => {
        if (req.destroyed) return clearInterval(drip);
        req.write(Buffer.alloc(1024, 1));
      }, 50);
      req.on('close', () => clearInterval(drip));
    });

  const used = async (accountId: string) =>
    ((await h.assets.m.AccountState.findById(accountId).lean<{ usedBytes?: number }>().exec())?.usedBytes ?? 0) as number;
  const staging = async () => {
    const dir = path.join(h.blobRoot, '_staging');
    return readdir(dir).catch(() => [] as string[]);
  };

  it('a single-PUT session with file_size 10 answers 413 at the 11th byte, while the client still sends; nothing stored', async () => {
    const p = h.principal();
    const s = await h.assets.sessions.create(p, { fileName: 'ten.bin', fileSize: 10 }, null);
    const before = await staging();
    const r = await answerBeforeEnd(
      local(h.assets.sessions.uploadUrl(s._id)),
      'PUT',
      { 'content-type': 'application/octet-stream' },
      Buffer.alloc(3 * 1024, 7),
    );
    expect(r.status).toBe(413);
    expect(r.body.error.code).toBe('assets.payload_too_large');
    expect(await h.assets.m.Asset.countDocuments({ accountId: p.accountId })).toBe(0);
    expect((await h.assets.sessions.get(p, s._id)).status).toBe('open');
    expect((await staging()).filter((f) => !before.includes(f))).toEqual([]);
  });

  it('a chunked part past its size is cut with 413', async () => {
    const p = h.principal();
    const s = await h.assets.sessions.create(p, { mode: 'chunked', fileName: 'c.bin', fileSize: 20, partSize: MiB }, null);
    const part = Buffer.alloc(20);
    const r = await answerBeforeEnd(
      local(`${h.assets.sessions.uploadUrl(s._id)}/parts/1`),
      'PUT',
      { 'content-type': 'application/octet-stream', 'x-content-sha256': sha(part) },
      Buffer.alloc(4096),
    );
    expect(r.status).toBe(413);
  });

  it('a session reserves its file_size at creation (402 when there is no room) and gives it back on cancel and expiry', async () => {
    const p = h.principal();
    const a = await h.assets.sessions.create(p, { fileName: 'a.bin', fileSize: 40 * 1024 }, null);
    expect(await used(p.accountId)).toBe(40 * 1024);
    await expect(h.assets.sessions.create(p, { fileName: 'b.bin', fileSize: 40 * 1024 }, null)).rejects.toMatchObject({
      status: 402,
      code: 'assets.quota_exceeded',
    });
    await h.assets.sessions.cancel(p, a._id);
    expect(await used(p.accountId)).toBe(0);
    const b = await h.assets.sessions.create(p, { mode: 'chunked', fileName: 'b.bin', fileSize: 40 * 1024, partSize: MiB }, null);
    await h.assets.sessions.expireDue(new Date(Date.now() + 25 * 3600 * 1000));
    expect((await h.assets.sessions.get(p, b._id)).status).toBe('expired');
    expect(await used(p.accountId)).toBe(0);
    // Completed: the reservation becomes the asset's bytes, counted once.
    const body = Buffer.alloc(1000, 3);
    const c = await h.assets.sessions.create(p, { fileName: 'c.bin', fileSize: body.length }, null);
    const res = await fetch(local(h.assets.sessions.uploadUrl(c._id)), {
      method: 'PUT',
      body,
      headers: { 'content-type': 'application/octet-stream' },
    });
    expect(res.status).toBe(201);
    expect(await used(p.accountId)).toBe(1000);
  });

  it('the content policy is bounded by the plan: no limit above the quota, no session above it', async () => {
    const p = h.principal();
    await expect(h.assets.putPolicy(p, { maxOtherBytes: 1024 ** 4 })).rejects.toMatchObject({ status: 400 });
    await expect(h.assets.sessions.create(p, { fileName: 'huge.bin', fileSize: 1024 ** 4 }, null)).rejects.toMatchObject({
      status: 400,
      code: 'assets.policy_violation',
    });
    expect(await used(p.accountId)).toBe(0);
  });

  it('a multipart upload is cut at what is left of the quota (402) while the client still sends', async () => {
    const p = h.principal();
    const small = new FormData();
    small.append('file', new Blob([Buffer.alloc(1000, 2)]), 'small.bin');
    expect(
      (await fetch(`${h.bridgeUrl}/api/v1/assets/upload`, { method: 'POST', headers: h.headers(p), body: small })).status,
    ).toBe(201);
    const boundary = 'b0undary';
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    );
    const r = await answerBeforeEnd(
      new URL(`${h.bridgeUrl}/api/v1/assets/upload`),
      'POST',
      { ...h.headers(p), 'content-type': `multipart/form-data; boundary=${boundary}` },
      Buffer.concat([head, Buffer.alloc(QUOTA + 1024, 5)]),
    );
    expect(r.status).toBe(402);
    expect(r.body.error).toMatchObject({ code: 'assets.quota_exceeded', details: { remaining_bytes: QUOTA - 1000 } });
    expect(await used(p.accountId)).toBe(1000);
    expect(await h.assets.m.Asset.countDocuments({ accountId: p.accountId })).toBe(1);
  });
});
