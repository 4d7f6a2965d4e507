import { COMMERCE_CODES } from '../../subgraphs/commerce/errors';
import { WEBHOOK_RECEIVER_PATH } from '../../subgraphs/commerce/service';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { base, connectStorefront, tenant } from './support';

jest.setTimeout(180_000);

/** Requests per minute per key on this platform: low enough to reach, high enough for the other cases. */
const LIMIT = 40;
let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform({ RATE_LIMIT_PER_MINUTE: String(LIMIT) });
});
afterAll(async () => {
  await t.stop();
});

/** Spec convention 3: every error on a commerce route is `COMMERCE_`-coded, in the commerce envelope. */
function expectCommerceError(res: { status: number; body: any }, status: number, code: keyof typeof COMMERCE_CODES) {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  expect(COMMERCE_CODES[code]).toBe(status);
  expect(res.body).toEqual({
    success: false,
    status: 'error',
    status_code: status,
    message: expect.any(String),
    data: null,
    error: { code, message: expect.any(String), details: expect.any(Object) },
  });
}

describe('errors on commerce routes from the bridge and kernel carry COMMERCE_ codes', () => {
  it('refused bodies and queries: 422 COMMERCE_INVALID_CONFIGURATION (broken JSON, two values, unknown field, forbidden key, bad query)', async () => {
    const tn = await tenant(t);
    await connectStorefront(t, tn);
    const P = `${base(tn.projectId)}/environments/production`;
    const put = (rawBody: string) => t.rest('PUT', P, { key: tn.key, rawBody });
    expectCommerceError(await put('{"app_url":'), 422, 'COMMERCE_INVALID_CONFIGURATION');
    expectCommerceError(await put('{"app_url":"https://a.example.com"} {}'), 422, 'COMMERCE_INVALID_CONFIGURATION');
    const unknown = await put('{"app_url":"https://a.example.com","colour":"red"}');
    expectCommerceError(unknown, 422, 'COMMERCE_INVALID_CONFIGURATION');
    expect(JSON.stringify(unknown.body.error.details)).toContain('colour');
    expectCommerceError(await put('{"__proto__":{"x":1}}'), 422, 'COMMERCE_INVALID_CONFIGURATION');
    const query = await t.rest('GET', `${base(tn.projectId)}/releases?limit=0`, { key: tn.key });
    expectCommerceError(query, 422, 'COMMERCE_INVALID_CONFIGURATION');
  });

  it('413 COMMERCE_PAYLOAD_TOO_LARGE and 415 COMMERCE_UNSUPPORTED_MEDIA_TYPE', async () => {
    const tn = await tenant(t);
    const P = `${base(tn.projectId)}/environments/production`;
    const big = await t.rest('PUT', P, { key: tn.key, body: { config_name: 'x'.repeat(65 * 1024) } });
    expectCommerceError(big, 413, 'COMMERCE_PAYLOAD_TOO_LARGE');
    const text = await t.rest('PUT', P, { key: tn.key, rawBody: 'hello', headers: { 'content-type': 'text/plain' } });
    expectCommerceError(text, 415, 'COMMERCE_UNSUPPORTED_MEDIA_TYPE');
  });

  it('401 COMMERCE_UNAUTHENTICATED, 404 COMMERCE_NOT_FOUND for an unknown commerce path, 405 COMMERCE_METHOD_NOT_ALLOWED', async () => {
    const tn = await tenant(t);
    expectCommerceError(await t.rest('GET', `${base(tn.projectId)}/releases`), 401, 'COMMERCE_UNAUTHENTICATED');
    expectCommerceError(await t.rest('GET', `${base(tn.projectId)}/no-such-thing`, { key: tn.key }), 404, 'COMMERCE_NOT_FOUND');
    const del = await t.rest('DELETE', `${base(tn.projectId)}/releases`, { key: tn.key });
    expectCommerceError(del, 405, 'COMMERCE_METHOD_NOT_ALLOWED');
    expect(del.headers.get('allow')).toBe('GET, HEAD, POST');
  });

  it('the webhook receiver answers an oversized body with 413 COMMERCE_PAYLOAD_TOO_LARGE', async () => {
    const res = await t.rest('POST', WEBHOOK_RECEIVER_PATH, { rawBody: 'x'.repeat(65 * 1024) });
    expectCommerceError(res, 413, 'COMMERCE_PAYLOAD_TOO_LARGE');
  });

  // Last but one: the flood spends this client address's bucket (unknown keys count per address).
  it('429 COMMERCE_TOO_MANY_REQUESTS with Retry-After', async () => {
    const tn = await tenant(t);
    let last: Awaited<ReturnType<TestPlatform['rest']>> | undefined;
    for (let i = 0; i <= LIMIT + 1; i++) {
      last = await t.rest('GET', `${base(tn.projectId)}/releases`, { key: `${tn.key}-flood` });
      if (last.status === 429) break;
    }
    expectCommerceError(last!, 429, 'COMMERCE_TOO_MANY_REQUESTS');
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('leaves other areas alone', async () => {
    const { key } = await t.createKey();
    const res = await t.rest('POST', '/api/v1/publisher/sites', { key, rawBody: '{"name":' });
    expect([res.status, res.body.error.code]).toEqual([400, 'invalid_json']);
  });
});
