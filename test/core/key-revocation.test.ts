import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { AREAS } from '../../subgraphs/registry';
import { startTestPlatform, uniqueName, type TestPlatform } from '../support/platform';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
}, 60_000);
afterAll(async () => t?.stop());

const revokeCli = AREAS.identity.cli!.find((c) => c.words.join(' ') === 'keys revoke')!;

async function until(cond: () => boolean | Promise<boolean>, timeoutMs: number) {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('platform keys revoke', () => {
  it('declares --key-id as required', () => {
    expect(revokeCli.required).toEqual(['key-id']);
  });

  it('prints revoked: true, the key stops within 5 s and its open subscription is closed', async () => {
    const identity = t.platform.services.identity;
    const created = await identity.createApiKey({ accountSlug: uniqueName('rev'), plan: 'pro' });
    const project = await identity.createProject(created.accountId, 'Revoked');
    const before = await t.rest('GET', '/api/v1/publisher/runtime-options', { key: created.key });
    expect(before.status).toBe(200);

    let closedWith: number | undefined;
    const client = createClient({
      url: t.routerUrl.replace(/^http/, 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${created.key}` },
      retryAttempts: 0,
      lazy: false,
      onNonLazyError: () => undefined,
      on: { closed: (e) => (closedWith = (e as { code: number }).code) },
    });
    let connected = false;
    client.on('connected', () => (connected = true));
    const unsubscribe = client.subscribe(
      { query: 'subscription($p: ID!) { operationUpdated(projectId: $p) { id status } }', variables: { p: project._id } },
      { next: () => undefined, error: () => undefined, complete: () => undefined },
    );
    await until(() => connected, 10_000);

    const printed = await revokeCli.run({ values: { 'key-id': created.keyId }, services: identity } as never);
    expect(printed).toMatchObject({ key_id: created.keyId, revoked: true });

    const revokedAt = Date.now();
    await until(
      async () => (await t.rest('GET', '/api/v1/publisher/runtime-options', { key: created.key })).status === 401,
      5_000,
    );
    const after = await t.rest('GET', '/api/v1/publisher/runtime-options', { key: created.key });
    expect(after.body).toMatchObject({ success: false, error: { code: 'unauthenticated' } });

    await until(() => closedWith !== undefined, 5_000);
    expect(closedWith).toBe(4403);
    expect(Date.now() - revokedAt).toBeLessThan(7_000);
    unsubscribe();
    await client.dispose();
  }, 60_000);

  it('refuses an unknown key id with 404 key_not_found', async () => {
    await expect(
      revokeCli.run({ values: { 'key-id': 'no-such-key' }, services: t.platform.services.identity } as never),
    ).rejects.toMatchObject({ code: 'key_not_found', status: 404 });
  });
});
