import { form, type Harness, startHarness } from './harness';

/** RFC 9110 13.1.5: a `Range` with `If-Range` is honoured only while the validator still matches. */
describe('CDN If-Range', () => {
  let h: Harness;
  let url: string;
  let etag: string;
  let lastModified: string;
  const BYTES = Buffer.from('0123456789abcdefghij');

  beforeAll(async () => {
    h = await startHarness();
    const p = h.principal();
    const res = await fetch(`${h.bridgeUrl}/api/v1/assets/upload`, {
      method: 'POST',
      headers: h.headers(p),
      body: form(BYTES, 'resume.bin', { key: 'resume.bin', visibility: 'public' }),
    });
    expect(res.status).toBe(201);
    const id = ((await res.json()) as any).data.id as string;
    url = `${h.cdnUrl}/assets/${id}/versions/1/resume.bin`;
    const got = await fetch(url);
    etag = got.headers.get('etag') as string;
    lastModified = got.headers.get('last-modified') as string;
    await got.arrayBuffer();
    // Last-Modified is a strong validator once it is a second older than the answer (8.8.2.2).
    await new Promise((r) => setTimeout(r, 1100));
  });
  afterAll(async () => h.close());

  const get = async (headers: Record<string, string>) => {
    const res = await fetch(url, { headers });
    return { status: res.status, range: res.headers.get('content-range'), body: Buffer.from(await res.arrayBuffer()) };
  };
  const whole = (r: { status: number; range: string | null; body: Buffer }) => {
    expect(r.status).toBe(200);
    expect(r.range).toBeNull();
    expect(r.body.equals(BYTES)).toBe(true);
  };

  it('sends ETag and Last-Modified', () => {
    expect(etag).toMatch(/^"[0-9a-f]{64}"$/);
    expect(new Date(lastModified).toUTCString()).toBe(lastModified);
  });

  it('answers 206 when the entity tag matches (strong comparison)', async () => {
    const r = await get({ Range: 'bytes=2-5', 'If-Range': etag });
    expect(r.status).toBe(206);
    expect(r.range).toBe(`bytes 2-5/${BYTES.length}`);
    expect(r.body.toString()).toBe('2345');
  });

  it('answers 200 with the whole representation for a stale entity tag', async () => {
    whole(await get({ Range: 'bytes=2-5', 'If-Range': `"${'0'.repeat(64)}"` }));
  });

  it('never matches a weak entity tag, even of the same bytes', async () => {
    whole(await get({ Range: 'bytes=2-5', 'If-Range': `W/${etag}` }));
  });

  it('answers 206 for an HTTP-date equal to a strong Last-Modified, 200 for any other date', async () => {
    const r = await get({ Range: 'bytes=0-3', 'If-Range': lastModified });
    expect(r.status).toBe(206);
    expect(r.body.toString()).toBe('0123');
    const later = new Date(Date.parse(lastModified) + 1000).toUTCString();
    whole(await get({ Range: 'bytes=0-3', 'If-Range': later }));
    const earlier = new Date(Date.parse(lastModified) - 1000).toUTCString();
    whole(await get({ Range: 'bytes=0-3', 'If-Range': earlier }));
  });

  it('sends the whole representation for an If-Range that is neither a tag nor a date', async () => {
    whole(await get({ Range: 'bytes=0-3', 'If-Range': 'not a validator' }));
  });

  it('ignores If-Range without Range', async () => {
    whole(await get({ 'If-Range': `"${'0'.repeat(64)}"` }));
  });
});
