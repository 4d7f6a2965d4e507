import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import type { IdentityService } from '../../subgraphs/identity/service';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/**
 * Credentials derived from a key after the key is revoked (decision 0099): the write credentials
 * (upload capabilities, upload-session URLs) end with the key; private download links do not.
 * The key's liveness comes from identity through the kernel's key-status port, as wired in production.
 */
describe('derived credentials after their key is revoked', () => {
  let t: TestPlatform;
  let blobDir: string;
  let identity: IdentityService;
  beforeAll(async () => {
    blobDir = await mkdtemp(path.join(tmpdir(), 'assets-revoke-'));
    t = await startTestPlatform({ ASSETS_BLOB_DIR: blobDir });
    identity = t.platform.services.identity as IdentityService;
  });
  afterAll(async () => {
    await t.stop();
    await rm(blobDir, { recursive: true, force: true });
  });

  const widget = (token: string) => {
    const fd = new FormData();
    fd.append('file', new Blob(['from the browser']), `w-${Math.random().toString(36).slice(2)}.txt`);
    return fetch(`${t.bridgeUrl}/assets/widget`, { method: 'POST', headers: { 'x-upload-capability': token }, body: fd });
  };
  const local = (u: string) => u.replace(/^https?:\/\/[^/]+/, t.bridgeUrl);
  const cdn = (u: string) => u.replace(/^https?:\/\/[^/]+/, t.platform.cdnUrl!);

  it('a revoked key’s upload capability and session URL stop working; its private download link keeps working', async () => {
    const { key } = await t.createKey();
    const keyId = (await identity.authenticate(key))!.keyId;
    const cap = (await t.rest('POST', '/api/v1/assets/upload-capabilities', { key, body: {} })).body.data.token as string;
    const session = await t.rest('POST', '/api/v1/assets/upload-sessions', { key, body: { file_name: 's.txt', file_size: 5 } });
    expect(session.status).toBe(201);
    const fd = new FormData();
    fd.append('file', new Blob(['private']), 'p.txt');
    const up = await fetch(`${t.bridgeUrl}/api/v1/assets/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    });
    const assetId = ((await up.json()) as any).data.id as string;
    const link = (await t.rest('POST', `/api/v1/assets/${assetId}/signed-url`, { key, body: { expires_in: 600 } })).body.data.url;
    // Before the revocation all three work (the widget once, to prove the token).
    expect((await widget(cap)).status).toBe(201);

    await identity.revokeApiKey(keyId);
    const refused = await widget(cap);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as any).error.code).toBe('assets.invalid_capability');
    const put = await fetch(local(session.body.data.url), {
      method: 'PUT',
      body: Buffer.from('hello'),
      headers: { 'content-type': 'application/octet-stream' },
    });
    expect(put.status).toBe(404);
    // A download link handed to someone is theirs until it expires (decision 0099).
    const got = await fetch(cdn(link));
    expect(got.status).toBe(200);
    expect(await got.text()).toBe('private');
    // Another, live key of the account is unaffected.
    const other = await t.createKey();
    const cap2 = (await t.rest('POST', '/api/v1/assets/upload-capabilities', { key: other.key, body: {} })).body.data.token;
    expect((await widget(cap2)).status).toBe(201);
  });

  it('a workflow hook whose activating key is revoked starts no run (403) until a live key activates it', async () => {
    const { key, account } = await t.createKey();
    const keyId = (await identity.authenticate(key))!.keyId;
    const wf = await t.rest('POST', '/api/v1/assets/workflows', {
      key,
      body: {
        name: 'hooked',
        draft: { trigger: { type: 'hook' }, steps: [{ id: 'mark', type: 'tag', config: { add: ['x'] } }] },
      },
    });
    expect(wf.status).toBe(201);
    expect((await t.rest('POST', `/api/v1/assets/workflows/${wf.body.data.id}/publish`, { key })).status).toBe(201);
    const activated = (await t.rest('POST', `/api/v1/assets/workflows/${wf.body.data.id}/activate`, { key })).body.data;
    const fd = new FormData();
    fd.append('file', new Blob(['x']), 'h.txt');
    const up = await fetch(`${t.bridgeUrl}/api/v1/assets/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    });
    const assetId = ((await up.json()) as any).data.id as string;
    const wh = new Webhook(activated.hook_secret);
    const send = (id: string) => {
      const at = new Date();
      const body = JSON.stringify({ asset_id: assetId });
      return t.rest('POST', new URL(activated.hook_url).pathname, {
        rawBody: body,
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': wh.sign(id, at, body),
        },
      });
    };
    expect((await send('msg_live')).status).toBe(202);
    await identity.revokeApiKey(keyId);
    const refused = await send('msg_revoked');
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('assets.hook_actor_revoked');
    const other = await t.createKey({ account });
    expect((await t.rest('POST', `/api/v1/assets/workflows/${wf.body.data.id}/activate`, { key: other.key })).status).toBe(200);
    expect((await send('msg_again')).status).toBe(202);
  });
});
