import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { PRINCIPAL_HEADER, signPrincipal } from '../../core/principal';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { waitForOperation } from '../publisher/support';

let t: TestPlatform;

beforeAll(async () => {
  // Subgraphs also serve HTTP here, so the forged-header test can call one directly.
  t = await startTestPlatform({}, { serveSubgraphs: true, subgraphBasePort: 0 });
});
afterAll(async () => {
  await t.stop();
});

async function createSite(key: string, name: string) {
  const res = await t.rest('POST', '/api/v1/publisher/sites', { key, body: { name } });
  expect(res.status).toBe(202);
  return res.body.data as { project: { id: string }; operation: { id: string }; site_url: string };
}

describe('the federated graph', () => {
  it("answers a project's name (identity) and its site's siteUrl (publisher) in one request", async () => {
    const { key } = await t.createKey();
    const site = await createSite(key, 'Two Subgraphs');
    const res = await t.gql(
      'query($id: ID!) { project(id: $id) { id name sourceType site { siteUrl status runtimeVersion } } }',
      { id: site.project.id },
      key,
    );
    expect(res.errors).toBeUndefined();
    expect(res.data.project).toEqual({
      id: site.project.id,
      name: 'Two Subgraphs',
      sourceType: 'publisher',
      site: { siteUrl: site.site_url, status: expect.any(String), runtimeVersion: '5.130.5' },
    });
  });

  it('carries error codes and statuses from subgraphs through the gateway', async () => {
    const anonymous = await t.gql('{ runtimeOptions { version } }');
    expect(anonymous.errors?.[0].extensions).toMatchObject({ code: 'unauthenticated', status: 401 });
    const { key } = await t.createKey();
    const missing = await t.gql(
      'query($id: ID!) { project(id: $id) { name } }',
      { id: '00000000-0000-4000-8000-000000000000' },
      key,
    );
    expect(missing.errors?.[0].extensions).toMatchObject({ code: 'project_not_found', status: 404 });
  });

  it('a subgraph refuses a request whose principal header is missing or forged', async () => {
    const url = t.platform.subgraphUrls.publisher;
    const query = JSON.stringify({ query: '{ runtimeOptions { version } }' });
    const post = (headers: Record<string, string>) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: query });

    const missing = await post({});
    expect(missing.status).toBe(403);
    expect(((await missing.json()) as any).errors[0].extensions.code).toBe('forbidden');

    const principal = { accountId: 'a', accountSlug: 'a', plan: 'pro' as const, keyId: 'k', role: 'owner' as const, scopes: [] };
    const rid = { 'x-request-id': 'fed-test-1' };
    const bound = { audience: 'publisher', requestId: rid['x-request-id'] };
    const forged = await post({ ...rid, [PRINCIPAL_HEADER]: signPrincipal(principal, bound, 'not-the-real-signing-key') });
    expect(forged.status).toBe(403);

    const [payload, mac] = signPrincipal(principal, bound).split('.');
    const tampered = Buffer.from(
      JSON.stringify({
        p: { ...principal, role: 'owner', accountId: 'someone-else' },
        iat: Date.now(),
        aud: 'publisher',
        rid: bound.requestId,
      }),
    ).toString('base64url');
    expect(tampered).not.toBe(payload);
    const altered = await post({ ...rid, [PRINCIPAL_HEADER]: `${tampered}.${mac}` });
    expect(altered.status).toBe(403);

    // Signed for another subgraph, or lifted onto another request id: refused.
    const elsewhere = await post({ ...rid, [PRINCIPAL_HEADER]: signPrincipal(principal, { ...bound, audience: 'billing' }) });
    expect(elsewhere.status).toBe(403);
    const lifted = await post({ 'x-request-id': 'fed-test-2', [PRINCIPAL_HEADER]: signPrincipal(principal, bound) });
    expect(lifted.status).toBe(403);

    const genuine = await post({ ...rid, [PRINCIPAL_HEADER]: signPrincipal(principal, bound) });
    expect(genuine.status).toBe(200);
    expect(((await genuine.json()) as any).data.runtimeOptions.length).toBeGreaterThan(2);
  });
});

describe('operationUpdated subscriptions', () => {
  const wsUrl = () => t.routerUrl.replace(/^http/, 'ws');

  function subscribe(key: string | undefined, projectId: string) {
    const client = createClient({
      url: wsUrl(),
      webSocketImpl: WebSocket,
      connectionParams: key ? { authorization: `Bearer ${key}` } : {},
      retryAttempts: 0,
      lazy: false,
      onNonLazyError: () => undefined,
    });
    const events: any[] = [];
    let fail: (e: unknown) => void = () => undefined;
    let settle: () => void = () => undefined;
    const ended = new Promise<void>((resolve, reject) => {
      settle = resolve;
      fail = reject;
    });
    const unsubscribe = client.subscribe(
      {
        query:
          'subscription($p: ID!) { operationUpdated(projectId: $p) { id status step operationType resourceType updatedAt } }',
        variables: { p: projectId },
      },
      {
        next: (v) => {
          if (v.errors) return fail(v.errors);
          events.push(v.data!.operationUpdated);
        },
        error: (e) => fail(e),
        complete: () => settle(),
      },
    );
    return { client, events, ended, unsubscribe };
  }

  async function until(cond: () => boolean, timeoutMs = 20_000) {
    const end = Date.now() + timeoutMs;
    while (!cond()) {
      if (Date.now() > end) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  it("shows a restart operation's status changes in order through to completed", async () => {
    const { key } = await t.createKey();
    const site = await createSite(key, 'Live Feed');
    await waitForOperation(t, key, site.project.id, site.operation.id);
    const sub = subscribe(key, site.project.id);
    sub.ended.catch(() => undefined);
    // Give the server a moment to register the subscription before the operation starts.
    await new Promise((r) => setTimeout(r, 300));
    const restart = await t.rest('POST', `/api/v1/publisher/projects/${site.project.id}/actions`, {
      key,
      body: { action: 'restart' },
    });
    expect(restart.status).toBe(202);
    const opId = restart.body.data.operation.id;
    await until(() => sub.events.some((e) => e.id === opId && e.status === 'completed'));
    sub.unsubscribe();
    await sub.client.dispose();

    const mine = sub.events.filter((e) => e.id === opId);
    expect(mine.every((e) => e.operationType === 'restart' && e.resourceType === 'site')).toBe(true);
    expect(mine.map((e) => `${e.status}:${e.step}`)).toEqual([
      'pending:queued',
      'running:queued',
      'running:stop_runtime',
      'running:start_runtime',
      'running:health_check',
      'completed:completed',
    ]);
    const times = mine.map((e) => Date.parse(e.updatedAt));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
  });

  it('refuses anonymous connections and projects of another account', async () => {
    const owner = await t.createKey();
    const stranger = await t.createKey();
    const site = await createSite(owner.key, 'Not Yours');

    const anonymous = subscribe(undefined, site.project.id);
    await expect(anonymous.ended).rejects.toMatchObject({ code: 4403 });
    await anonymous.client.dispose();

    const foreign = subscribe(stranger.key, site.project.id);
    await expect(foreign.ended).rejects.toEqual([expect.objectContaining({ message: 'project not found' })]);
    await foreign.client.dispose();
  });
});
