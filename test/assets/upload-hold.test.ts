import Fastify from 'fastify';
import { readdir } from 'node:fs/promises';
import { request, type ClientRequest } from 'node:http';
import path from 'node:path';
import { WIDGET_PATH, widgetPlane } from '../../subgraphs/assets/widget/widget-plane';
import { type Harness, startHarness } from './harness';

const KiB = 1024;
const QUOTA = 64 * KiB;

/**
 * Multipart uploads, replaces and widget uploads reserve quota before their first byte (decision
 * 0140): the declared length (else what is left) is held while the bytes stream, refused with 402
 * at once when it does not fit, settled to the file's size when stored and given back on failure.
 */
describe('assets quota held before the first byte of an upload', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ ASSETS_QUOTA_BYTES_FREE: String(QUOTA) });
  });
  afterAll(async () => h.close());

  const used = async (accountId: string) =>
    ((await h.assets.m.AccountState.findById(accountId).lean<{ usedBytes?: number }>().exec())?.usedBytes ?? 0) as number;
  const stored = async (accountId: string) =>
    (await h.assets.m.Asset.find({ accountId }, { size: 1 }).lean<{ size: number }[]>().exec()).reduce((n, a) => n + a.size, 0);
  const until = async (what: () => Promise<boolean>, ms = 8000) => {
    const end = Date.now() + ms;
    while (!(await what())) {
      if (Date.now() > end) throw new Error('condition not reached');
      await new Promise((r) => setTimeout(r, 25));
    }
  };

  const boundary = 'h0ldb0undary';
  const framing = (name: string) => ({
    head: Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    ),
    tail: Buffer.from(`\r\n--${boundary}--\r\n`),
  });

  /**
   * A multipart upload with a `Content-Length`, of which only `sent` file bytes go out at first;
   * `finish()` sends the rest. `answer` resolves with the status and body the server sends.
   */
  let n = 0;
  const slowUpload = (
    method: string,
    path: string,
    headers: Record<string, string>,
    size: number,
    sent: number,
    base = h.bridgeUrl,
  ) => {
    const { head, tail } = framing(`f${++n}.bin`);
    const file = Buffer.alloc(size, 9);
    let req!: ClientRequest;
    const answer = new Promise<{ status: number; body: any }>((resolve, reject) => {
      req = request(
        new URL(path, base),
        {
          method,
          headers: {
            ...headers,
            'content-type': `multipart/form-data; boundary=${boundary}`,
            'content-length': String(head.length + size + tail.length),
          },
        },
        (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : null }));
        },
      );
      req.on('error', reject);
    });
    req.write(Buffer.concat([head, file.subarray(0, sent)]));
    return {
      length: head.length + size + tail.length,
      answer,
      finish: () => req.end(Buffer.concat([file.subarray(sent), tail])),
      abort: () => req.destroy(),
    };
  };

  const upload = async (p: ReturnType<Harness['principal']>, size: number, extra: Record<string, string> = {}) => {
    const form = new FormData();
    for (const [k, v] of Object.entries(extra)) form.append(k, v);
    form.append('file', new Blob([Buffer.alloc(size, 4)]), `x${++n}.bin`);
    const res = await fetch(`${h.bridgeUrl}/api/v1/assets/upload`, { method: 'POST', headers: h.headers(p), body: form });
    return { status: res.status, body: (await res.json()) as any };
  };

  it('an upload holds its declared length while it streams; one that does not fit is refused 402 at once; the hold settles to the file', async () => {
    const p = h.principal();
    const a = slowUpload('POST', '/api/v1/assets/upload', h.headers(p), 40 * KiB, KiB);
    // Held before the file is whole: the declared length, not yet the file.
    await until(async () => (await used(p.accountId)) === a.length);
    // A second upload that would not fit beside it is refused without being stored.
    const b = await upload(p, 30 * KiB);
    expect(b.status).toBe(402);
    expect(b.body.error.code).toBe('assets.quota_exceeded');
    // A replace is held the same way: refused while the first upload holds the room.
    const small = await upload(p, 100);
    expect(small.status).toBe(201);
    const r = slowUpload('PUT', `/api/v1/assets/${small.body.data.id}/replace`, h.headers(p), 30 * KiB, 10);
    expect((await r.answer).status).toBe(402);
    r.abort();
    a.finish();
    const done = await a.answer;
    expect(done.status).toBe(201);
    // Settled: the account pays for the files, not for the framing.
    expect(await used(p.accountId)).toBe(40 * KiB + 100);
    expect(await stored(p.accountId)).toBe(40 * KiB + 100);
  });

  it('the hold is taken while the first bytes are read, and none is stored before it (decision 0255)', async () => {
    const p = h.principal();
    const uploads = h.assets.uploads;
    const hold = uploads.holdWithPolicy.bind(uploads);
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    // The hold's commands wait until the test lets them go.
    const held = jest.spyOn(uploads, 'holdWithPolicy').mockImplementation(async (...a) => {
      await gate;
      return hold(...a);
    });
    const staging = jest.spyOn(uploads, 'stage');
    try {
      const a = slowUpload('POST', '/api/v1/assets/upload', h.headers(p), 8 * KiB, KiB);
      // The file's part is already being read while the hold is in flight...
      await until(async () => staging.mock.calls.length === 1);
      // ...but no byte reached a staged file, and nothing is held yet.
      expect(await readdir(path.join(h.blobRoot, '_staging')).catch(() => [])).toEqual([]);
      expect(await used(p.accountId)).toBe(0);
      open();
      await until(async () => (await used(p.accountId)) === a.length);
      a.finish();
      expect((await a.answer).status).toBe(201);
      expect(await used(p.accountId)).toBe(8 * KiB);
      expect(await stored(p.accountId)).toBe(8 * KiB);
    } finally {
      open();
      held.mockRestore();
      staging.mockRestore();
    }
  });

  it('a failed or abandoned upload gives its hold back', async () => {
    const p = h.principal();
    const bad = await upload(p, 2000, { checksum_sha256: 'a'.repeat(64) });
    expect(bad.status).toBe(422);
    expect(await used(p.accountId)).toBe(0);
    const gone = slowUpload('POST', '/api/v1/assets/upload', h.headers(p), 20 * KiB, KiB);
    gone.answer.catch(() => undefined);
    await until(async () => (await used(p.accountId)) === gone.length);
    gone.abort();
    await until(async () => (await used(p.accountId)) === 0);
    const replaced = await upload(p, 500);
    const rep = slowUpload('PUT', `/api/v1/assets/${replaced.body.data.id}/replace`, h.headers(p), 300, 300);
    rep.finish();
    expect((await rep.answer).status).toBe(200);
    expect(await used(p.accountId)).toBe(800);
    expect(await h.assets.m.Asset.countDocuments({ accountId: p.accountId })).toBe(1);
  });

  it('concurrent uploads on an account near its quota never store more than the quota together', async () => {
    const p = h.principal();
    expect((await upload(p, 20 * KiB)).status).toBe(201);
    // Six uploads of 12 KiB start together and stream slowly; 44 KiB are left, so at most three fit.
    const all = Array.from({ length: 6 }, () => slowUpload('POST', '/api/v1/assets/upload', h.headers(p), 12 * KiB, 100));
    await new Promise((r) => setTimeout(r, 300));
    for (const u of all) u.finish();
    const answers = await Promise.all(all.map((u) => u.answer));
    const ok = answers.filter((a) => a.status === 201).length;
    expect(answers.every((a) => a.status === 201 || a.status === 402)).toBe(true);
    expect(ok).toBe(3);
    expect(await stored(p.accountId)).toBe(20 * KiB + ok * 12 * KiB);
    expect(await stored(p.accountId)).toBeLessThanOrEqual(QUOTA);
    expect(await used(p.accountId)).toBe(await stored(p.accountId));
  });

  it('a widget upload holds its quota the same way', async () => {
    const widget = Fastify();
    await widget.register(async (scope) => widgetPlane(scope, h.assets));
    const base = await widget.listen({ port: 0, host: '127.0.0.1' });
    try {
      const p = h.principal();
      const { token } = await h.assets.capabilities.issue(p, {});
      const headers = { 'x-upload-capability': token };
      const a = slowUpload('POST', WIDGET_PATH, headers, 40 * KiB, KiB, base);
      await until(async () => (await used(p.accountId)) === a.length);
      const b = slowUpload('POST', WIDGET_PATH, headers, 30 * KiB, 10, base);
      expect((await b.answer).status).toBe(402);
      b.abort();
      a.finish();
      expect((await a.answer).status).toBe(201);
      expect(await used(p.accountId)).toBe(40 * KiB);
      // An abandoned widget upload gives its hold back.
      const gone = slowUpload('POST', WIDGET_PATH, headers, 10 * KiB, KiB, base);
      gone.answer.catch(() => undefined);
      await until(async () => (await used(p.accountId)) === 40 * KiB + gone.length);
      gone.abort();
      await until(async () => (await used(p.accountId)) === 40 * KiB);
    } finally {
      await widget.close();
    }
  });
});
