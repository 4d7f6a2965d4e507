import http from 'node:http';
import { startTestPlatform, type TestPlatform } from '../support/platform';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
}, 120_000);
afterAll(async () => {
  await t?.stop();
});

/** Raw request: fetch refuses TRACE, and a 405 must come before any body is read. */
function raw(method: string, path: string): Promise<{ status: number; allow?: string; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(path, t.bridgeUrl), { method }, (res) => {
      let data = '';
      res.on('data', (c) => (data += c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          allow: res.headers.allow as string | undefined,
          body: data ? JSON.parse(data) : null,
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

const id = '00000000-0000-4000-8000-000000000000';

it('answers 405 with Allow and the standard envelope for an unserved method on a publisher path', async () => {
  const { key } = await t.createKey();
  const res = await t.rest('DELETE', '/api/v1/publisher/sites', { key });
  expect(res.status).toBe(405);
  expect(res.headers.get('allow')).toBe('POST');
  expect(res.body).toEqual({
    success: false,
    error: { code: 'method_not_allowed', message: expect.any(String), details: { allow: ['POST'] } },
  });
  const rp = await t.rest('PATCH', `/api/v1/publisher/projects/${id}/recovery-points`, { key, body: {} });
  expect([rp.status, rp.headers.get('allow')]).toEqual([405, 'GET, HEAD, POST']);
});

it('answers 405 in the commerce envelope, for any method (TRACE too), and 404 for unknown paths', async () => {
  const trace = await raw('TRACE', `/api/v1/projects/${id}/commerce/releases`);
  expect(trace.status).toBe(405);
  expect(trace.allow).toBe('GET, HEAD, POST');
  expect(trace.body).toMatchObject({
    success: false,
    status: 'error',
    status_code: 405,
    data: null,
    error: { code: 'COMMERCE_METHOD_NOT_ALLOWED' },
  });
  const unknown = await t.rest('DELETE', '/api/v1/publisher/no-such-thing');
  expect(unknown.status).toBe(404);
});

it('answers 405 with Allow on the byte routes and the bridge’s own routes too', async () => {
  const healthz = await raw('TRACE', '/healthz');
  expect([healthz.status, healthz.allow]).toEqual([405, 'GET, HEAD']);
  // `/api/v1/assets/mcp` is not the asset `mcp`: its own methods are listed.
  const mcp = await raw('OPTIONS', '/api/v1/assets/mcp');
  expect([mcp.status, mcp.allow]).toEqual([405, 'DELETE, GET, HEAD, POST']);
  const upload = await raw('OPTIONS', '/api/v1/assets/upload');
  expect([upload.status, upload.allow]).toEqual([405, 'POST']);
  const report = await raw('QUERY', '/api/v1/assets/migrations/x/report');
  expect([report.status, report.allow]).toEqual([405, 'GET, HEAD']);
  const receiver = await raw('TRACE', '/api/v1/commerce/webhooks');
  expect([receiver.status, receiver.allow, receiver.body.error.code]).toEqual([405, 'POST', 'COMMERCE_METHOD_NOT_ALLOWED']);
});
