import { randomUUID } from 'node:crypto';
import { operationDocument } from '../../app/areas';
import { PRINCIPAL_HEADER, signPrincipal } from '../../core/principal';
import { httpExecutor } from '../../contract/graphql-executor';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/**
 * With the roles in separate processes (`platform start --replicas`, docker-compose), a REST row's
 * body crosses two more HTTP hops as GraphQL variables: bridge → router, router → subgraph. The
 * largest rows the bridge accepts (a bulk job of 10,000 items, 4 MiB) must pass both.
 */
let t: TestPlatform;

beforeAll(async () => {
  t = await startTestPlatform({}, { serveSubgraphs: true, subgraphBasePort: 0 });
});
afterAll(async () => {
  await t.stop();
});

const items = () =>
  Array.from({ length: 10_000 }, () => ({ assetId: randomUUID(), revision: 1, action: 'add_tags', tags: ['replicated'] }));

describe('bodies of the largest REST rows across separate processes', () => {
  it('a 10,000-item bulk job reaches the router from a bridge in another process', async () => {
    const { key } = await t.createKey({ plan: 'pro' });
    const variables = { items: items() };
    expect(JSON.stringify(variables).length).toBeGreaterThan(1024 * 1024);
    const result = await httpExecutor(`${t.routerUrl}`).execute(operationDocument('assets', 'submit-bulk'), variables, {
      authorization: `Bearer ${key}`,
      requestId: 'split-body-1',
    });
    expect(result.errors).toBeUndefined();
    expect((result.data as any).submitAssetBulk).toMatchObject({ total: 10_000 });
  });

  it('and reaches an assets subgraph in another process from the router', async () => {
    const { accountId, account } = await t.createKey({ plan: 'pro' });
    const principal = { accountId, accountSlug: account, plan: 'pro' as const, keyId: 'k', role: 'owner' as const, scopes: [] };
    const rid = 'split-body-2';
    const res = await fetch(t.platform.subgraphUrls.assets, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-request-id': rid,
        [PRINCIPAL_HEADER]: signPrincipal(principal, { audience: 'assets', requestId: rid }),
      },
      body: JSON.stringify({ query: operationDocument('assets', 'submit-bulk'), variables: { items: items() } }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.errors).toBeUndefined();
    expect(body.data.submitAssetBulk.total).toBe(10_000);
  });
});
