import { randomUUID } from 'node:crypto';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { scrape } from '../support/prometheus';

let t: TestPlatform;
let cdnUrl: string;

beforeAll(async () => {
  t = await startTestPlatform();
  cdnUrl = t.platform.cdnUrl as string;
});
afterAll(async () => {
  await t.stop();
});

describe('GET /metrics on the CDN listener', () => {
  it('serves Prometheus text with the CDN listener’s own request series', async () => {
    expect(cdnUrl).toMatch(/^http:\/\//);
    const before = await scrape(cdnUrl);
    expect(before.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const route = '/assets/:id/versions/:version/:filename';
    const missing = `${cdnUrl}/assets/${randomUUID()}/versions/1/x.bin`;
    for (let i = 0; i < 2; i++) expect((await fetch(missing)).status).toBe(404);

    const after = await scrape(cdnUrl);
    const labels = { component: 'cdn', method: 'GET', route, status: '404' };
    expect(after.value('platform_http_requests_total', labels) - before.value('platform_http_requests_total', labels)).toBe(2);
    expect(after.types.get('platform_http_request_duration_seconds')).toBe('histogram');
    expect(after.types.get('platform_process_resident_memory_bytes')).toBe('gauge');
  });
});
