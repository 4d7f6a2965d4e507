import { createHash, randomBytes } from 'node:crypto';
import { type Harness, startHarness } from './harness';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const MiB = 1024 ** 2;

/** Upload sessions: chunked parts in any order and in parallel, checksums, idempotency, cancel, expiry. */
describe('assets upload sessions', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h.close());
  const local = (url: string) => url.replace(/^https?:\/\/[^/]+/, h.bridgeUrl);
  const put = (url: string, body: Buffer, headers: Record<string, string> = {}) =>
    fetch(local(url), { method: 'PUT', body, headers: { 'content-type': 'application/octet-stream', ...headers } });

  it('a chunked session with parts sent in reverse order, in parallel, completes with a matching checksum', async () => {
    const p = h.principal();
    const file = randomBytes(3 * MiB + 12345);
    const s = await h.assets.sessions.create(
      p,
      { mode: 'chunked', fileName: 'big.bin', fileSize: file.length, partSize: MiB, checksumSha256: sha(file) },
      'idem-1',
    );
    const url = h.assets.sessions.uploadUrl(s._id);
    const parts = [1, 2, 3, 4].map((n) => file.subarray((n - 1) * MiB, n * MiB));
    const bad = await put(`${url}/parts/2`, parts[1], { 'x-content-sha256': sha(parts[0]) });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as any).error.code).toBe('assets.checksum_mismatch');
    const answers = await Promise.all(
      [4, 3, 2, 1].map((n) => put(`${url}/parts/${n}`, parts[n - 1], { 'x-content-sha256': sha(parts[n - 1]) })),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    const read = await h.assets.sessions.get(p, s._id);
    expect(read.parts.map((x) => x.number).sort()).toEqual([1, 2, 3, 4]);
    const asset = await h.assets.sessions.complete(p, s._id);
    expect(asset).toMatchObject({ size: file.length, checksum: sha(file), status: 'ready', originalName: 'big.bin' });
    await expect(h.assets.sessions.complete(p, s._id)).rejects.toMatchObject({ status: 409 });

    // Same Idempotency-Key and body: the same session; another body: 409 assets.idempotency_conflict.
    const again = await h.assets.sessions.create(
      p,
      { mode: 'chunked', fileName: 'big.bin', fileSize: file.length, partSize: MiB, checksumSha256: sha(file) },
      'idem-1',
    );
    expect(again._id).toBe(s._id);
    await expect(
      h.assets.sessions.create(p, { mode: 'chunked', fileName: 'other.bin', fileSize: 5, partSize: MiB }, 'idem-1'),
    ).rejects.toMatchObject({
      status: 409,
      code: 'assets.idempotency_conflict',
    });
  });

  it('refuses a whole-file checksum mismatch at complete (422) and keeps nothing', async () => {
    const p = h.principal();
    const file = randomBytes(MiB + 10);
    const s = await h.assets.sessions.create(
      p,
      { mode: 'chunked', fileName: 'x.bin', fileSize: file.length, partSize: MiB, checksumSha256: '0'.repeat(64) },
      null,
    );
    const url = h.assets.sessions.uploadUrl(s._id);
    for (const n of [1, 2]) {
      const b = file.subarray((n - 1) * MiB, n * MiB);
      expect((await put(`${url}/parts/${n}`, b, { 'x-content-sha256': sha(b) })).status).toBe(200);
    }
    await expect(h.assets.sessions.complete(p, s._id)).rejects.toMatchObject({ status: 422 });
    expect((await h.assets.list(p, { filter: {} })).total).toBe(0);
    expect((await h.assets.sessions.get(p, s._id)).status).toBe('open');
  });

  it('a single-PUT session, cancel, expiry, and a forged capability is 404', async () => {
    const p = h.principal();
    const body = Buffer.from('single put body');
    const s = await h.assets.sessions.create(p, { fileName: 's.txt', fileSize: body.length }, null);
    expect(s.mode).toBe('single');
    const res = await put(h.assets.sessions.uploadUrl(s._id), body);
    expect(res.status).toBe(201);
    expect(((await res.json()) as any).data).toMatchObject({ size: body.length, original_name: 's.txt', status: 'ready' });
    expect((await put(h.assets.sessions.uploadUrl(s._id).replace(/\.[^.]+$/, '.forged'), body)).status).toBe(404);

    const c = await h.assets.sessions.create(p, { mode: 'chunked', fileName: 'c.bin', fileSize: 10, partSize: MiB }, null);
    expect((await h.assets.sessions.cancel(p, c._id)).status).toBe('cancelled');
    const part = Buffer.alloc(10);
    expect((await put(`${h.assets.sessions.uploadUrl(c._id)}/parts/1`, part, { 'x-content-sha256': sha(part) })).status).toBe(
      409,
    );

    const e = await h.assets.sessions.create(p, { mode: 'chunked', fileName: 'e.bin', fileSize: 10, partSize: MiB }, null);
    await h.assets.sessions.expireDue(new Date(Date.now() + 25 * 3600 * 1000));
    expect((await h.assets.sessions.get(p, e._id)).status).toBe('expired');
    await expect(h.assets.sessions.get(h.principal(), e._id)).rejects.toMatchObject({ status: 404 });
  });
});
