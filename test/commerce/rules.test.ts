import { WEBHOOK_RECEIVER_PATH } from '../../subgraphs/commerce/service';
import { signWebhook } from '../../subgraphs/commerce/webhook-signature';
import { startTestPlatform, type TestPlatform, uniqueName } from '../support/platform';
import { base, cli, commerce, connectApp, connectStorefront, tenant, waitOperation } from './support';

// A busy shared machine can stretch the operations here well past jest's default.
jest.setTimeout(180_000);

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(async () => {
  await t.stop();
});

const errorOf = (res: { status: number; body: any }) => ({ status: res.status, code: res.body?.error?.code });

describe('commerce rules (spec 5.4, 7.2, 8)', () => {
  it('answers 422 COMMERCE_INVALID_CONFIGURATION for the causes of 7.2, naming the field and never echoing a secret', async () => {
    const app = await tenant(t);
    await connectApp(t, app);
    const sf = await tenant(t);
    await connectStorefront(t, sf);
    const put = (tn: typeof app, env: string, body: unknown) =>
      t.rest('PUT', `${base(tn.projectId)}/environments/${env}`, { key: tn.key, body });
    const cases: Array<[Promise<any>, string?]> = [
      [put(sf, 'production', { client_secret: 'app-only-secret-value' })],
      [put(app, 'production', { public_storefront_token: 'sf-only-token-value' })],
      [put(app, 'preview', { app_url: 'https://a.example.com' })],
      [put(sf, 'production', { storefront_id: 'not-a-uuid' }), 'storefront_id'],
      [put(sf, 'production', { app_url: 'http://plain.example.com' }), 'app_url'],
      [put(app, 'development', { app_url: 'https://a.example.com/path' }), 'app_url'],
      [put(app, 'staging', {})],
      [
        t.rest('POST', `${base(app.projectId)}/connect`, {
          key: app.key,
          body: { kind: 'app', store_domain: app.store.store_domain, development_branch: 'main', settings: { api_token: 'x' } },
        }),
      ],
      [
        t.rest('POST', `${base(app.projectId)}/connect`, {
          key: app.key,
          body: { kind: 'storefront', store_domain: app.store.store_domain, development_branch: 'main' },
        }),
        'development_branch',
      ],
      [
        t.rest('POST', `${base(app.projectId)}/connect`, { key: app.key, body: { kind: 'theme', store_domain: 'x.example' } }),
        'kind',
      ],
      [
        t.rest('POST', `${base(app.projectId)}/connect`, {
          key: app.key,
          body: { kind: 'storefront', store_domain: `${uniqueName('nostore')}.example`, confirm_generic_storefront: true },
        }),
        'store_domain',
      ],
      [
        t.rest('POST', `${base(sf.projectId)}/storefront/promotions`, { key: sf.key, body: { preview_id: 'nope' } }),
        'preview_id',
      ],
      [t.rest('PUT', `${base(sf.projectId)}/storefront/settings`, { key: sf.key, body: { customer_password: 'x' } })],
      [t.rest('PUT', `${base(sf.projectId)}/storefront/settings`, { key: sf.key, body: { theme: 'dark' } })],
    ];
    for (const [p, field] of cases) {
      const res = await p;
      expect(errorOf(res)).toEqual({ status: 422, code: 'COMMERCE_INVALID_CONFIGURATION' });
      expect(res.body).toMatchObject({ success: false, status: 'error', status_code: 422, data: null });
      if (field) expect(res.body.error.details.field).toBe(field);
      expect(JSON.stringify(res.body)).not.toMatch(/app-only-secret-value|sf-only-token-value/);
    }
    const settings = await t.rest('PUT', `${base(sf.projectId)}/storefront/settings`, {
      key: sf.key,
      body: { default_locale: 'de-DE', cache_ttl_seconds: 300, maintenance_mode: false },
    });
    expect(settings.status).toBe(200);
    expect(settings.body.data.settings).toEqual({ default_locale: 'de-DE', cache_ttl_seconds: 300, maintenance_mode: false });
    const onApp = await t.rest('PUT', `${base(app.projectId)}/storefront/settings`, { key: app.key, body: { currency: 'USD' } });
    expect(errorOf(onApp)).toEqual({ status: 422, code: 'COMMERCE_CONFIG_MISMATCH' });
  });

  it('Idempotency-Key: same key and body → the same operation; another body → 409 COMMERCE_IDEMPOTENCY_CONFLICT', async () => {
    const tn = await tenant(t);
    const body = { kind: 'app', store_domain: tn.store.store_domain, development_branch: 'main' };
    const headers = { 'idempotency-key': uniqueName('idem') };
    const first = await t.rest('POST', `${base(tn.projectId)}/connect`, { key: tn.key, body, headers });
    const again = await t.rest('POST', `${base(tn.projectId)}/connect`, { key: tn.key, body, headers });
    expect(first.status).toBe(202);
    expect(again.status).toBe(202);
    expect(again.body.data.id).toBe(first.body.data.id);
    const other = await t.rest('POST', `${base(tn.projectId)}/connect`, {
      key: tn.key,
      body: { ...body, development_branch: 'develop' },
      headers,
    });
    expect(errorOf(other)).toEqual({ status: 409, code: 'COMMERCE_IDEMPOTENCY_CONFLICT' });

    await waitOperation(t, tn.key, tn.projectId, first.body.data.id);
    await t.rest('PUT', `${base(tn.projectId)}/environments/development`, {
      key: tn.key,
      body: { automation_token: tn.store.admin_token },
    });
    const vh = { 'idempotency-key': uniqueName('idem') };
    const v1 = await t.rest('POST', `${base(tn.projectId)}/environments/development/verify`, { key: tn.key, headers: vh });
    const v2 = await t.rest('POST', `${base(tn.projectId)}/environments/development/verify`, { key: tn.key, headers: vh });
    expect(v2.body.data.id).toBe(v1.body.data.id);
    const v3 = await t.rest('POST', `${base(tn.projectId)}/environments/production/verify`, { key: tn.key, headers: vh });
    expect(errorOf(v3)).toEqual({ status: 409, code: 'COMMERCE_IDEMPOTENCY_CONFLICT' });
  });

  it('access: 401 without a key, 404 COMMERCE_NOT_FOUND for another account or unknown project, 403 read-only, 402 paused', async () => {
    const tn = await tenant(t);
    await connectStorefront(t, tn);
    expect(errorOf(await t.rest('GET', base(tn.projectId)))).toEqual({ status: 401, code: 'COMMERCE_UNAUTHENTICATED' });
    const stranger = await t.createKey();
    const hidden = await t.rest('GET', base(tn.projectId), { key: stranger.key });
    expect(errorOf(hidden)).toEqual({ status: 404, code: 'COMMERCE_NOT_FOUND' });
    expect(hidden.body).toMatchObject({ success: false, status_code: 404 });
    const unknown = await t.rest('GET', base('00000000-0000-4000-8000-000000000000'), { key: tn.key });
    expect(errorOf(unknown)).toEqual({ status: 404, code: 'COMMERCE_NOT_FOUND' });
    expect(errorOf(await t.rest('GET', base('not-a-uuid'), { key: tn.key }))).toEqual({
      status: 404,
      code: 'COMMERCE_NOT_FOUND',
    });
    const ops = await t.rest('GET', `${base(tn.projectId)}/operations/00000000-0000-4000-8000-000000000000`, { key: tn.key });
    expect(errorOf(ops)).toEqual({ status: 404, code: 'COMMERCE_NOT_FOUND' });

    const reader = await t.createKey({ account: tn.account, role: 'read_only' });
    expect((await t.rest('GET', base(tn.projectId), { key: reader.key })).status).toBe(200);
    const write = await t.rest('PUT', `${base(tn.projectId)}/storefront/settings`, {
      key: reader.key,
      body: { currency: 'USD' },
    });
    expect(errorOf(write)).toEqual({ status: 403, code: 'COMMERCE_FORBIDDEN' });

    await t.platform.services.identity.setSubscription(tn.account, 'paused');
    const paused = await t.rest('GET', base(tn.projectId), { key: tn.key });
    expect(errorOf(paused)).toEqual({ status: 402, code: 'COMMERCE_SUBSCRIPTION_INACTIVE' });
    expect(paused.body.error.details).toEqual({ subscription: 'paused' });
    // A paused account still cannot learn about other accounts' projects.
    await t.platform.services.identity.setSubscription(stranger.account, 'paused');
    expect(errorOf(await t.rest('GET', base(tn.projectId), { key: stranger.key }))).toEqual({
      status: 404,
      code: 'COMMERCE_NOT_FOUND',
    });
    await t.platform.services.identity.setSubscription(tn.account, 'active');
    expect((await t.rest('GET', base(tn.projectId), { key: tn.key })).status).toBe(200);
  });

  it("surfaces the commerce platform's rate limit as 503 COMMERCE_RATE_LIMITED and its outage as 500 COMMERCE_OPERATION_FAILED", async () => {
    const tn = await tenant(t);
    const limited = await t.rest('POST', `${base(tn.projectId)}/connect`, {
      key: tn.key,
      body: { kind: 'storefront', store_domain: `rate-limited-${uniqueName('s')}.example`, confirm_generic_storefront: true },
    });
    expect(errorOf(limited)).toEqual({ status: 503, code: 'COMMERCE_RATE_LIMITED' });
    expect(limited.body.status_code).toBe(503);
    const down = await t.rest('POST', `${base(tn.projectId)}/connect`, {
      key: tn.key,
      body: { kind: 'storefront', store_domain: `unavailable-${uniqueName('s')}.example`, confirm_generic_storefront: true },
    });
    expect(errorOf(down)).toEqual({ status: 500, code: 'COMMERCE_OPERATION_FAILED' });
  });

  it('a storefront on a store whose storefront API is older than the runtime supports → 422 COMMERCE_UNSUPPORTED_HYDROGEN_RUNTIME', async () => {
    const tn = await tenant(t);
    const legacy = await cli(t, 'commerce stores create', { domain: `legacy-${uniqueName('s')}.example` });
    const res = await t.rest('POST', `${base(tn.projectId)}/connect`, {
      key: tn.key,
      body: { kind: 'storefront', store_domain: legacy.store_domain, confirm_generic_storefront: true },
    });
    expect(errorOf(res)).toEqual({ status: 422, code: 'COMMERCE_UNSUPPORTED_HYDROGEN_RUNTIME' });
    expect(res.body.error.details).toEqual({ storefront_api_version: '2023-01', minimum_version: '2024-01' });
    // An app does not run the storefront runtime: the same store is fine for it.
    const app = await t.rest('POST', `${base(tn.projectId)}/connect`, {
      key: tn.key,
      body: { kind: 'app', store_domain: legacy.store_domain, development_branch: 'main' },
    });
    expect(app.status).toBe(202);
  });

  it('bodies: strict JSON, no unknown fields, at most 64 KiB', async () => {
    const tn = await tenant(t);
    await connectStorefront(t, tn);
    const P = `${base(tn.projectId)}/environments/production`;
    const unknownField = await t.rest('PUT', P, { key: tn.key, body: { app_url: 'https://a.example.com', colour: 'red' } });
    expect(unknownField.status).toBe(422);
    expect(unknownField.body).toMatchObject({
      success: false,
      status_code: 422,
      error: { code: 'COMMERCE_INVALID_CONFIGURATION' },
    });
    const twoValues = await t.rest('PUT', P, { key: tn.key, rawBody: '{"app_url":"https://a.example.com"} {}' });
    expect(twoValues.status).toBe(422);
    const big = await t.rest('PUT', P, { key: tn.key, body: { config_name: 'x'.repeat(65 * 1024) } });
    expect(big.status).toBe(413);
    expect(big.body).toMatchObject({
      success: false,
      status: 'error',
      status_code: 413,
      error: { code: 'COMMERCE_PAYLOAD_TOO_LARGE' },
    });
  });
});

describe('commerce webhooks (spec 6.3)', () => {
  it('records a signed webhook once per connection of the store; refuses a bad signature and records nothing', async () => {
    const tn = await tenant(t);
    await connectStorefront(t, tn);
    const emitted = await cli(t, 'commerce stores emit', { domain: tn.store.store_domain, topic: 'orders/create' });
    expect(emitted.webhook_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(emitted.deliveries).toEqual([{ status: 200 }]);
    const list = await t.rest('GET', `${base(tn.projectId)}/webhooks`, { key: tn.key });
    expect(list.status).toBe(200);
    expect(list.body.data.items).toEqual([
      expect.objectContaining({
        id: emitted.webhook_id,
        topic: 'orders/create',
        store_domain: tn.store.store_domain,
        signature_verified: true,
      }),
    ]);
    const one = await t.rest('GET', `${base(tn.projectId)}/webhooks/${emitted.webhook_id}`, { key: tn.key });
    expect(one.body.data).toMatchObject({ id: emitted.webhook_id, payload: expect.objectContaining({ topic: 'orders/create' }) });
    const missing = await t.rest('GET', `${base(tn.projectId)}/webhooks/${uniqueName('w')}`, { key: tn.key });
    expect(errorOf(missing)).toEqual({ status: 404, code: 'COMMERCE_NOT_FOUND' });

    // Forged: right shape, wrong key. Refused before parsing; nothing recorded.
    const raw = JSON.stringify({ id: 'forged-1', topic: 'orders/paid', shop_domain: tn.store.store_domain });
    const ts = Math.floor(Date.now() / 1000);
    const send = (signature: string, timestamp = ts) =>
      fetch(`${t.bridgeUrl}${WEBHOOK_RECEIVER_PATH}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': 'forged-1',
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signature,
        },
        body: raw,
      });
    const forged = await send(signWebhook('whsec_d3Jvbmcta2V5LXdyb25nLWtleQ==', 'forged-1', ts, raw));
    expect(forged.status).toBe(401);
    expect(((await forged.json()) as any).error.code).toBe('COMMERCE_UNAUTHENTICATED');
    const stale = await send(signWebhook(commerce(t).webhookSecret, 'forged-1', ts - 3600, raw), ts - 3600);
    expect(stale.status).toBe(401);
    const after = await t.rest('GET', `${base(tn.projectId)}/webhooks`, { key: tn.key });
    expect(after.body.data.items.map((w: any) => w.id)).toEqual([emitted.webhook_id]);

    // The same webhook delivered again is not recorded twice.
    const good = await send(signWebhook(commerce(t).webhookSecret, 'forged-1', ts, raw));
    expect(good.status).toBe(200);
    const again = await send(signWebhook(commerce(t).webhookSecret, 'forged-1', ts, raw));
    expect(((await again.json()) as any).data).toEqual({ recorded: 0, duplicate: 1 });
  });
});

describe('commerce analytics (spec 8)', () => {
  it('buckets recorded traffic by range: 1h minutes, 24h hours, 7d days + hour timeseries, 30d days; unknown → 7d', async () => {
    const tn = await tenant(t);
    await connectStorefront(t, tn);
    const record = (requests: number, errors: number, minutesAgo: number) =>
      cli(t, 'commerce traffic', {
        project: tn.projectId,
        requests: String(requests),
        errors: String(errors),
        'minutes-ago': String(minutesAgo),
      });
    expect(await record(10, 2, 0)).toMatchObject({ recorded: 10 });
    await record(5, 1, 30);
    await record(7, 0, 3 * 60);
    await record(4, 4, 3 * 24 * 60);
    await record(9, 0, 20 * 24 * 60);
    const get = async (range?: string) => {
      const res = await t.rest(
        'GET',
        `${base(tn.projectId)}/storefront/analytics${range === undefined ? '' : `?range=${range}`}`,
        { key: tn.key },
      );
      expect(res.status).toBe(200);
      return res.body.data;
    };
    const sum = (bs: any[]) => bs.reduce((a, b) => a + b.requests, 0);

    const h = await get('1h');
    expect(h).toMatchObject({ range: '1h', granularity: 'minute', timeseries: null });
    expect(h.buckets).toHaveLength(60);
    expect(h.buckets[0]).toEqual({ start: expect.any(String), requests: expect.any(Number), errors: expect.any(Number) });
    expect(new Date(h.buckets[1].start).getTime() - new Date(h.buckets[0].start).getTime()).toBe(60_000);
    expect(sum(h.buckets)).toBe(15);
    // The sample of now sits in the last bucket (or the one before, if a minute turned meanwhile).
    expect(h.buckets[58].requests + h.buckets[59].requests).toBe(10);

    const d = await get('24h');
    expect(d).toMatchObject({ granularity: 'hour' });
    expect(d.buckets).toHaveLength(24);
    expect(sum(d.buckets)).toBe(22);

    const w = await get('7d');
    expect(w).toMatchObject({ range: '7d', granularity: 'day', timeseries_granularity: 'hour' });
    expect(w.buckets).toHaveLength(7);
    expect(w.timeseries).toHaveLength(144 + new Date(w.to).getUTCHours() + 1);
    expect(sum(w.buckets)).toBe(26);
    expect(sum(w.timeseries)).toBe(26);
    expect(w.totals).toEqual({ requests: 26, errors: 7 });
    expect(new Date(w.buckets[0].start).getUTCHours()).toBe(0);

    const m = await get('30d');
    expect(m.buckets).toHaveLength(30);
    expect(sum(m.buckets)).toBe(35);

    for (const r of [undefined, '90d', '']) {
      const x = await get(r);
      expect(x.range).toBe('7d');
      expect(x.timeseries.length).toBeGreaterThanOrEqual(145);
    }
  });
});
