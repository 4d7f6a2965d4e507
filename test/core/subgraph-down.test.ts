import { startTestPlatform, type TestPlatform } from '../support/platform';

describe('a remote subgraph down', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    // A router alone whose subgraphs would listen on ports 1–8: nothing answers there.
    t = await startTestPlatform({ SUBGRAPH_BASE_PORT: '1' }, { role: { kind: 'router' }, workers: false });
  }, 60_000);
  afterAll(async () => t?.stop());

  it('is a retriable 503 service_unavailable, not a 500', async () => {
    const { key } = await t.createKey();
    const res = await t.gql('{ runtimeOptions { version } }', {}, key);
    expect(res.errors?.[0]?.extensions).toMatchObject({ code: 'service_unavailable', status: 503 });
  });
});
