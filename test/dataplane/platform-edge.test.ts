import http from 'node:http';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { EDGE_ENGINES } from './edge-engines';

/** A GET to the edge's address with a chosen Host header. */
function get(url: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.get({ host: u.hostname, port: u.port, path: '/', headers: { host }, agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

describe.each(EDGE_ENGINES)(
  'the platform process runs the edge and the supervisor (docs/decisions/0120-data-plane.md; EDGE_ENGINE=%s)',
  (engine) => {
    let tp: TestPlatform;
    afterAll(async () => tp?.stop().catch(() => undefined));

    it('listens on the edge, offers the site host to the areas as the dataPlane port, and closes the edge on stop', async () => {
      tp = await startTestPlatform({ EDGE_ENGINE: engine });
      expect(tp.platform.dataPlane!.edge.engine).toBe(engine);
      const edgeUrl = tp.platform.edgeUrl!;
      expect(edgeUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const port = new URL(edgeUrl).port;
      expect(port).not.toBe('8082');

      const dp = tp.platform.ports.get('dataPlane');
      expect(dp.edgeUrl).toBe(edgeUrl);
      expect(dp.sites).toBe(tp.platform.dataPlane!.sites);
      // Unset SITES_BASE_URL: the site's name under sites.localhost on the port the edge listens on.
      expect(dp.siteUrl('my-blog')).toBe(`http://my-blog.sites.localhost:${port}/`);

      const unknown = await get(edgeUrl, 'nobody.sites.localhost');
      expect(unknown.status).toBe(404);

      await tp.platform.stop();
      await expect(get(edgeUrl, 'nobody.sites.localhost')).rejects.toThrow(/ECONNREFUSED/);
    });

    it('takes the site address template from SITES_BASE_URL', async () => {
      const other = await startTestPlatform({ SITES_BASE_URL: 'https://{slug}.example.test/', EDGE_ENGINE: engine });
      try {
        expect(other.platform.ports.get('dataPlane').siteUrl('shop')).toBe('https://shop.example.test/');
      } finally {
        await other.stop();
      }
    });
  },
);
