import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type DnsStandIn, startDnsStandIn } from '../../core/dns/stand-in-server';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/** Custom domains through the bridge: TXT verification on the DNS stand-in, then delivery by Host. */
describe('assets custom domains', () => {
  let t: TestPlatform;
  let dns: DnsStandIn;
  let blobDir: string;
  beforeAll(async () => {
    dns = await startDnsStandIn({ zones: {} });
    blobDir = await mkdtemp(path.join(tmpdir(), 'assets-domains-'));
    t = await startTestPlatform({ ASSETS_BLOB_DIR: blobDir, ASSETS_DNS_SERVERS: dns.address });
  });
  afterAll(async () => {
    await t.stop();
    await dns.stop();
    await rm(blobDir, { recursive: true, force: true });
  });

  /** GET on the CDN listener with a chosen Host header (fetch does not let one set Host). */
  const cdnGet = (host: string, p: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const u = new URL(t.platform.cdnUrl!);
      const req = http.request({ host: u.hostname, port: u.port, path: p, headers: { host } }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });

  const upload = async (key: string, bucket: string, objectKey: string, body: string, visibility = 'public') => {
    const fd = new FormData();
    fd.append('bucket', bucket);
    fd.append('key', objectKey);
    fd.append('visibility', visibility);
    fd.append('file', new Blob([body]), path.basename(objectKey));
    const res = await fetch(`${t.bridgeUrl}/api/v1/assets/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    });
    expect(res.status).toBe(201);
  };

  it('create → 422 until the TXT record exists → verified → served by Host → deleted', async () => {
    const { key } = await t.createKey();
    const host = `img.d${randomBytes(4).toString('hex')}.example.com`;
    const bucket = (await t.rest('POST', '/api/v1/assets/buckets', { key, body: { name: 'site', default_visibility: 'public' } }))
      .body.data;
    await upload(key, bucket.id, 'logos/a.txt', 'served by the custom domain');
    await upload(key, bucket.id, 'private/b.txt', 'not public', 'private');

    const created = await t.rest('POST', '/api/v1/assets/domains', {
      key,
      body: { domain: host.toUpperCase(), bucket: bucket.id },
    });
    expect(created.status).toBe(201);
    const d = created.body.data;
    expect(d).toMatchObject({
      id: expect.any(String),
      domain: host,
      bucket: bucket.id,
      status: 'pending',
      verification: {
        type: 'TXT',
        name: `_platform-verification.${host}`,
        value: expect.stringMatching(/^platform-verification=/),
      },
      verified_at: null,
    });
    expect((await t.rest('POST', '/api/v1/assets/domains', { key, body: { domain: host, bucket: bucket.id } })).status).toBe(409);
    expect((await t.rest('GET', '/api/v1/assets/domains', { key })).body.data.items.map((x: any) => x.id)).toEqual([d.id]);

    // No record yet: 422 with what to publish; nothing is served.
    const missing = await t.rest('POST', `/api/v1/assets/domains/${d.id}/verify`, { key });
    expect(missing.status).toBe(422);
    expect(missing.body.error).toMatchObject({
      code: 'assets.domain_verification_failed',
      details: { name: d.verification.name, expected_value: d.verification.value },
    });
    expect((await cdnGet(host, '/logos/a.txt')).status).toBe(404);

    // A failing resolver is never read as "absent": 503.
    dns.setZones({ [d.verification.name]: { behavior: 'servfail' } });
    const failing = await t.rest('POST', `/api/v1/assets/domains/${d.id}/verify`, { key });
    expect(failing.status).toBe(503);
    expect(failing.body.error.code).toBe('assets.dns_unavailable');

    dns.setZones({ [d.verification.name]: { TXT: ['unrelated', d.verification.value] } });
    const ok = await t.rest('POST', `/api/v1/assets/domains/${d.id}/verify`, { key });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({ status: 'verified', verified_at: expect.any(String) });

    const served = await cdnGet(`${host}:443`, '/logos/a.txt');
    expect(served).toEqual({ status: 200, body: 'served by the custom domain' });
    expect((await cdnGet(host, '/private/b.txt')).status).toBe(404);
    expect((await cdnGet(host, '/logos/none.txt')).status).toBe(404);
    expect((await cdnGet('unknown.example.net', '/logos/a.txt')).status).toBe(404);

    // Another account may claim the host, but not verify it while the first holds it.
    const other = await t.createKey();
    const claim = (await t.rest('POST', '/api/v1/assets/domains', { key: other.key, body: { domain: host } })).body.data;
    dns.setZones({ [d.verification.name]: { TXT: [d.verification.value, claim.verification.value] } });
    const taken = await t.rest('POST', `/api/v1/assets/domains/${claim.id}/verify`, { key: other.key });
    expect(taken.status).toBe(409);
    expect(taken.body.error.code).toBe('assets.domain_taken');
    // …nor see or delete the first account's domain.
    expect((await t.rest('DELETE', `/api/v1/assets/domains/${d.id}`, { key: other.key })).status).toBe(404);

    const del = await t.rest('DELETE', `/api/v1/assets/domains/${d.id}`, { key });
    expect(del.status).toBe(200);
    expect((await cdnGet(host, '/logos/a.txt')).status).toBe(404);
    expect((await t.rest('DELETE', `/api/v1/assets/domains/${d.id}`, { key })).status).toBe(404);
    expect((await t.rest('POST', `/api/v1/assets/domains/${d.id}/verify`, { key })).status).toBe(404);
  });

  it('refuses bad input, unknown buckets, missing keys and read-only keys', async () => {
    const { key } = await t.createKey();
    expect(
      (await t.rest('POST', '/api/v1/assets/domains', { key, body: { domain: 'https://x.example.com/' } })).body.error.code,
    ).toBe('invalid_domain');
    expect((await t.rest('POST', '/api/v1/assets/domains', { key, body: { domain: '10.0.0.1' } })).status).toBe(400);
    expect((await t.rest('POST', '/api/v1/assets/domains', { key, body: { domain: 'a.example.com', extra: 1 } })).status).toBe(
      400,
    );
    const noBucket = await t.rest('POST', '/api/v1/assets/domains', {
      key,
      body: { domain: 'b.example.com', bucket: '00000000-0000-4000-8000-000000000000' },
    });
    expect(noBucket.status).toBe(404);
    expect((await t.rest('GET', '/api/v1/assets/domains')).status).toBe(401);
    const ro = await t.createKey({ role: 'read_only' });
    expect((await t.rest('GET', '/api/v1/assets/domains', { key: ro.key })).status).toBe(200);
    expect((await t.rest('POST', '/api/v1/assets/domains', { key: ro.key, body: { domain: 'c.example.com' } })).status).toBe(403);
  });
});
