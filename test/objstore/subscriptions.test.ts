import { startTestPlatform, type TestPlatform } from '../support/platform';
import { bucketPath, errorBody, knownBucket, UUID } from './support';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform({ OUTBOUND_ALLOW_HOSTS: '127.0.0.1' });
});
afterAll(() => t.stop());

describe('event subscriptions through the REST bridge', () => {
  it('creates a pull subscription by default; lists, reads, pauses, resumes and deletes it', async () => {
    const { key, accountId } = await t.createKey();
    const bucketId = await knownBucket(t, accountId);
    const created = await t.rest('POST', bucketPath(bucketId, '/event-subscriptions'), {
      key,
      body: { event_types: ['object.created'], prefix: 'img/', suffix: '.png' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      success: true,
      data: expect.objectContaining({
        id: expect.stringMatching(UUID),
        bucket_id: bucketId,
        delivery_mode: 'pull',
        url: null,
        event_types: ['object.created'],
        prefix: 'img/',
        suffix: '.png',
        enabled: true,
        status: 'active',
        has_signing_secret: false,
        signing_secret: null,
      }),
    });
    const id = created.body.data.id;
    const list = await t.rest('GET', bucketPath(bucketId, '/event-subscriptions'), { key });
    expect(list.status).toBe(200);
    expect(list.body.data.items.map((s: { id: string }) => s.id)).toEqual([id]);
    expect(list.body.data.next_cursor).toBe('');

    const paused = await t.rest('PATCH', bucketPath(bucketId, `/event-subscriptions/${id}`), { key, body: { enabled: false } });
    expect(paused.status).toBe(200);
    expect(paused.body.data).toMatchObject({ enabled: false, status: 'paused' });
    const resumed = await t.rest('PATCH', bucketPath(bucketId, `/event-subscriptions/${id}`), { key, body: { enabled: true } });
    expect(resumed.body.data).toMatchObject({ enabled: true, status: 'active' });

    const del = await t.rest('DELETE', bucketPath(bucketId, `/event-subscriptions/${id}`), { key });
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({ id, deleted: true });
    const gone = await t.rest('GET', bucketPath(bucketId, `/event-subscriptions/${id}`), { key });
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual(errorBody('subscription_not_found'));
  });

  it('shows a push secret once, never again, and a rotation returns a new one once', async () => {
    const { key, accountId } = await t.createKey();
    const bucketId = await knownBucket(t, accountId);
    const created = await t.rest('POST', bucketPath(bucketId, '/event-subscriptions'), {
      key,
      body: { delivery_mode: 'push', url: 'http://127.0.0.1:9/hook' },
    });
    expect(created.status).toBe(201);
    const secret = created.body.data.signing_secret;
    expect(secret).toMatch(/^whsec_/);
    expect(created.body.data).toMatchObject({
      delivery_mode: 'push',
      has_signing_secret: true,
      event_types: ['object.created', 'object.overwritten', 'object.deleted'],
    });
    const id = created.body.data.id;
    const read = await t.rest('GET', bucketPath(bucketId, `/event-subscriptions/${id}`), { key });
    expect(read.body.data).not.toHaveProperty('signing_secret');
    expect(JSON.stringify(read.body)).not.toContain(secret);
    const list = await t.rest('GET', bucketPath(bucketId, '/event-subscriptions'), { key });
    expect(JSON.stringify(list.body)).not.toContain(secret);

    const rotated = await t.rest('PATCH', bucketPath(bucketId, `/event-subscriptions/${id}`), {
      key,
      body: { rotate_secret: true },
    });
    expect(rotated.status).toBe(200);
    expect(rotated.body.data.signing_secret).toMatch(/^whsec_/);
    expect(rotated.body.data.signing_secret).not.toBe(secret);
    expect(rotated.body.data.secret_rotated_at).toEqual(expect.any(String));
    const later = await t.rest('PATCH', bucketPath(bucketId, `/event-subscriptions/${id}`), { key, body: { enabled: true } });
    expect(later.body.data.signing_secret).toBeNull();
  });

  it("answers 404 for another account's bucket and an unknown bucket", async () => {
    const owner = await t.createKey();
    const other = await t.createKey();
    const bucketId = await knownBucket(t, owner.accountId);
    const res = await t.rest('POST', bucketPath(bucketId, '/event-subscriptions'), { key: other.key, body: {} });
    expect(res.status).toBe(404);
    expect(res.body).toEqual(errorBody('bucket_not_found'));
    const sub = await t.rest('POST', bucketPath(bucketId, '/event-subscriptions'), { key: owner.key, body: {} });
    const peek = await t.rest('GET', bucketPath(bucketId, `/event-subscriptions/${sub.body.data.id}/history`), {
      key: other.key,
    });
    expect(peek.status).toBe(404);
    const unknown = await t.rest('GET', bucketPath('00000000-0000-4000-8000-000000000000', '/event-subscriptions'), {
      key: owner.key,
    });
    expect(unknown.status).toBe(404);
  });

  it('validates bodies: unknown fields, event types, url rules; read-only keys cannot write', async () => {
    const { key, accountId, account } = await t.createKey();
    const bucketId = await knownBucket(t, accountId);
    const path = bucketPath(bucketId, '/event-subscriptions');
    expect((await t.rest('POST', path, { key, body: { nope: 1 } })).status).toBe(400);
    expect((await t.rest('POST', path, { key, body: { event_types: ['object.moved'] } })).status).toBe(400);
    expect((await t.rest('POST', path, { key, body: { event_types: [] } })).status).toBe(400);
    const noUrl = await t.rest('POST', path, { key, body: { delivery_mode: 'push' } });
    expect(noUrl.body).toEqual(errorBody('push_url_required'));
    const pullUrl = await t.rest('POST', path, { key, body: { url: 'https://example.com/x' } });
    expect(pullUrl.body).toEqual(errorBody('url_not_allowed'));
    const ro = await t.createKey({ account, role: 'read_only' });
    const refused = await t.rest('POST', path, { key: ro.key, body: {} });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual(errorBody('read_only_key'));
    expect((await t.rest('GET', path, { key: ro.key })).status).toBe(200);
    expect((await t.rest('GET', path)).status).toBe(401);
  });

  it.each([
    ['plain http', 'http://example.com/hook'],
    ['credentials', 'https://user:secret@example.com/hook'],
    ['loopback (only 127.0.0.1 is allowed here)', 'https://127.0.0.2/hook'],
    ['loopback name', 'https://localhost/hook'],
    ['private', 'https://10.0.0.8/hook'],
    ['link-local', 'https://169.254.169.254/latest/meta-data'],
    ['reserved', 'https://240.0.0.1/hook'],
    ['IPv4-mapped IPv6', 'https://[::ffff:10.0.0.1]/hook'],
    ['IPv6 loopback', 'https://[::1]/hook'],
    ['IPv6 unique local', 'https://[fd00::1]/hook'],
    ['decimal loopback', 'https://2130706434/hook'],
  ])('refuses a push url with %s (400 unsafe_push_url)', async (_what, url) => {
    const { key, accountId } = await t.createKey();
    const bucketId = await knownBucket(t, accountId);
    const res = await t.rest('POST', bucketPath(bucketId, '/event-subscriptions'), { key, body: { delivery_mode: 'push', url } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(errorBody('unsafe_push_url'));
  });

  it('accepts a public https host that does not resolve yet (checked at each send)', async () => {
    const { key, accountId } = await t.createKey();
    const bucketId = await knownBucket(t, accountId);
    const res = await t.rest('POST', bucketPath(bucketId, '/event-subscriptions'), {
      key,
      body: { delivery_mode: 'push', url: 'https://hooks.does-not-exist.invalid/in' },
    });
    expect(res.status).toBe(201);
  });
});
