import { startTestPlatform, type TestPlatform } from '../support/platform';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(async () => {
  await t.stop();
});

describe('REST bridge transport', () => {
  it('answers an oversized body with 413 in the error envelope', async () => {
    const { key } = await t.createKey();
    const res = await t.rest('POST', '/api/v1/publisher/sites', {
      key,
      rawBody: JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10) }),
    });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ success: false, error: { code: 'payload_too_large', message: expect.any(String), details: {} } });
  });

  it('answers a non-JSON content type with 415', async () => {
    const { key } = await t.createKey();
    const res = await t.rest('POST', '/api/v1/publisher/sites', {
      key,
      rawBody: 'name=x',
      headers: { 'content-type': 'text/plain' },
    });
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('unsupported_media_type');
  });

  it('refuses prototype-poisoning keys at any depth with their own 400, not as invalid JSON', async () => {
    const { key } = await t.createKey();
    for (const rawBody of ['{"name":"a","__proto__":{"x":1}}', '{"name":"a","n":{"constructor":{"prototype":{"x":1}}}}']) {
      const res = await t.rest('POST', '/api/v1/publisher/sites', { key, rawBody });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'forbidden_json_key', message: expect.stringContaining('__proto__') });
    }
  });

  it('refuses more than one JSON value in a body', async () => {
    const { key } = await t.createKey();
    const res = await t.rest('POST', '/api/v1/publisher/sites', { key, rawBody: '{"name":"a"}{"name":"b"}' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_json');
  });

  it('echoes a well-formed X-Request-Id and makes one up otherwise', async () => {
    const given = await t.rest('GET', '/healthz', { headers: { 'x-request-id': 'req-123' } });
    expect(given.headers.get('x-request-id')).toBe('req-123');
    const made = await t.rest('GET', '/healthz', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('never leaks internals on an unexpected failure', async () => {
    const { key } = await t.createKey();
    const res = await t.rest('GET', '/api/v1/publisher/projects/not-a-uuid/metadata', { key });
    expect(res.status).toBe(404);
    expect(JSON.stringify(res.body)).not.toMatch(/stack|at \w+ \(/);
  });
});
