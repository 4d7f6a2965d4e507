import { startTestPlatform, type TestPlatform } from '../support/platform';

/**
 * The mail audit's limit (12 a minute per client address) counts the address the edge saw, signed
 * with the principal: through the router, neither the deprecated `clientIp` argument nor an
 * X-Forwarded-For header from an untrusted peer buys a fresh bucket.
 */
let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform({}, { workers: false });
}, 60_000);
afterAll(async () => t?.stop());

const audit = (clientIp: string, headers: Record<string, string> = {}) =>
  fetch(t.routerUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({
      query: 'query($ip: String) { mailAudit(domain: "simple.test", download: "0", clientIp: $ip) { domain } }',
      variables: { ip: clientIp },
    }),
  }).then(
    async (r) => (await r.json()) as { data?: unknown; errors?: Array<{ extensions?: { status?: number; code?: string } }> },
  );

it('changing the clientIp argument (or X-Forwarded-For) does not escape the limit through the router', async () => {
  const answers = [];
  for (let i = 0; i < 14; i++) {
    answers.push(await audit(`10.9.${i}.${i}`, { 'x-forwarded-for': `10.8.${i}.1` }));
  }
  const served = answers.filter((a) => !a.errors);
  expect(served).toHaveLength(12);
  expect(answers[13].errors?.[0]?.extensions).toMatchObject({ code: 'rate_limited', status: 429 });
});
