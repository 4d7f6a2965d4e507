import { randomUUID } from 'node:crypto';
import type { BillingService } from '../../subgraphs/billing';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { ISO, PREFIX, UUID, cli, errorBody, openCheckout } from './support';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(async () => {
  await t.stop();
});

const credits = () => t.platform.ports.get('credits');

describe('balance', () => {
  it('a pro account starts the month with its 1,000-credit allocation', async () => {
    const { key, accountId } = await t.createKey({ plan: 'pro' });
    const res = await t.rest('GET', PREFIX, { key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: {
        account_id: accountId,
        plan: 'pro',
        available: 1000,
        allocation: 1000,
        used_this_period: 0,
        byok_used_this_period: 0,
        top_ups: 0,
        carried_over: 0,
        adjustments: 0,
        period_start: expect.stringMatching(/^\d{4}-\d{2}-01T00:00:00\.000Z$/),
        period_end: expect.stringMatching(/^\d{4}-\d{2}-01T00:00:00\.000Z$/),
        updated_at: expect.stringMatching(ISO),
      },
    });
  });

  it('a free account gets 100; no key is 401', async () => {
    const { key } = await t.createKey({ plan: 'free' });
    expect((await t.rest('GET', PREFIX, { key })).body.data.available).toBe(100);
    expect(await t.rest('GET', PREFIX)).toMatchObject({ status: 401, body: errorBody('unauthenticated') });
  });
});

describe('usage', () => {
  it('the CLI records metered usage; the list shows it newest first with filters and a cursor', async () => {
    const { key, account, accountId } = await t.createKey({ plan: 'pro' });
    const first = await cli(t, [
      'credits',
      'record-usage',
      '--account',
      account,
      '--product',
      'agents',
      '--credits',
      '7',
      '--description',
      'run 1',
    ]);
    expect(first.code).toBe(0);
    expect(first.json).toMatchObject({
      id: expect.stringMatching(UUID),
      kind: 'usage',
      product: 'agents',
      credits: 7,
      balance_delta: -7,
      funding: 'managed',
      source: 'cli',
      description: 'run 1',
      balance_after: 993,
    });
    for (let i = 0; i < 4; i++) {
      await credits().recordUsage({
        accountId,
        product: 'assets',
        credits: 1,
        source: 'assets.ai.analyze',
        idempotencyKey: `a${i}`,
      });
    }
    const all = await t.rest('GET', `${PREFIX}/usage`, { key });
    expect(all.status).toBe(200);
    expect(all.body.data.items).toHaveLength(5);
    expect(all.body.data.items[4].id).toBe(first.json.id);
    expect(all.body.data.next_cursor).toBeNull();

    const assets = await t.rest('GET', `${PREFIX}/usage?product=assets&limit=3`, { key });
    expect(assets.body.data.items.map((e: any) => e.product)).toEqual(['assets', 'assets', 'assets']);
    const rest = await t.rest('GET', `${PREFIX}/usage?product=assets&limit=3&cursor=${assets.body.data.next_cursor}`, { key });
    expect(rest.body.data.items).toHaveLength(1);
    expect(rest.body.data.next_cursor).toBeNull();
    const seen = new Set([...assets.body.data.items, ...rest.body.data.items].map((e: any) => e.id));
    expect(seen.size).toBe(4);

    expect((await t.rest('GET', `${PREFIX}/usage?source=cli`, { key })).body.data.items).toHaveLength(1);
    const future = new Date(Date.now() + 60_000).toISOString();
    expect((await t.rest('GET', `${PREFIX}/usage?from=${future}`, { key })).body.data.items).toHaveLength(0);
    expect((await t.rest('GET', `${PREFIX}/usage?to=${future}`, { key })).body.data.items).toHaveLength(5);

    expect(await t.rest('GET', `${PREFIX}/usage?product=video`, { key })).toMatchObject({
      status: 400,
      body: errorBody('invalid_request'), // invalid_product: the row's enum/bound, refused by the bridge
    });
    expect(await t.rest('GET', `${PREFIX}/usage?limit=0`, { key })).toMatchObject({
      status: 400,
      body: errorBody('invalid_request'), // invalid_limit: the row's enum/bound, refused by the bridge
    });
    expect(await t.rest('GET', `${PREFIX}/usage?from=yesterday`, { key })).toMatchObject({ status: 400 });
    expect(await t.rest('GET', `${PREFIX}/usage?cursor=${assets.body.data.next_cursor}`, { key })).toMatchObject({
      status: 400,
      body: errorBody('invalid_cursor'),
    });
  });

  it('the same idempotency key through the port is one entry', async () => {
    const { key, accountId } = await t.createKey({ plan: 'free' });
    const u = { accountId, product: 'workflows' as const, credits: 5, source: 'workflows.run', idempotencyKey: 'same' };
    const [a, b] = await Promise.all([credits().recordUsage(u), credits().recordUsage(u)]);
    expect(a.entryId).toBe(b.entryId);
    expect((await t.rest('GET', PREFIX, { key })).body.data.available).toBe(95);
  });

  it('usage that would overdraw is 402 unless the product is byok', async () => {
    const { key, account, accountId } = await t.createKey({ plan: 'free' });
    await expect(
      credits().recordUsage({ accountId, product: 'agents', credits: 101, source: 'agents.act', idempotencyKey: 'big' }),
    ).rejects.toMatchObject({ status: 402, code: 'insufficient_credits', details: { available: 100, requested: 101 } });
    const refused = await cli(t, ['credits', 'record-usage', '--account', account, '--product', 'agents', '--credits', '500']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/not enough AI credits/);

    const put = await t.rest('PUT', `${PREFIX}/funding`, { key, body: { product: 'agents', mode: 'byok' } });
    expect(put.status).toBe(200);
    const byok = await credits().recordUsage({
      accountId,
      product: 'agents',
      credits: 101,
      source: 'agents.act',
      idempotencyKey: 'big2',
    });
    expect(byok.balanceAfter).toBe(100);
    const balance = (await t.rest('GET', PREFIX, { key })).body.data;
    expect(balance).toMatchObject({ available: 100, used_this_period: 0, byok_used_this_period: 101 });
    const listed = (await t.rest('GET', `${PREFIX}/usage`, { key })).body.data.items;
    expect(listed).toEqual([expect.objectContaining({ credits: 101, balance_delta: 0, funding: 'byok' })]);
  });

  it('50 concurrent draws and a concurrent top-up: balance = allocation + top-ups − usage, exactly', async () => {
    const { key, accountId } = await t.createKey({ plan: 'free' });
    const checkout = await openCheckout(t, key, 60, randomUUID());
    const draws = Array.from({ length: 50 }, (_, i) =>
      credits()
        .recordUsage({ accountId, product: 'assets', credits: 4, source: 'assets.ai.analyze', idempotencyKey: `d${i}` })
        .then(
          () => 'ok',
          (e) => e.code,
        ),
    );
    const topUp = (t.platform.services.billing as BillingService).completePayment(checkout.id);
    const [results] = await Promise.all([Promise.all(draws), topUp]);
    const ok = results.filter((r) => r === 'ok').length;
    expect(results.filter((r) => r !== 'ok').every((r) => r === 'insufficient_credits')).toBe(true);
    const b = (await t.rest('GET', PREFIX, { key })).body.data;
    expect(b.top_ups).toBe(60);
    expect(b.used_this_period).toBe(ok * 4);
    expect(b.available).toBe(b.allocation + b.top_ups - b.used_this_period);
    expect(b.available).toBeGreaterThanOrEqual(0);
    // 160 credits cover at most 40 draws of 4; how many fit depends on when the top-up landed.
    expect(ok).toBeLessThanOrEqual(40);
    expect(ok).toBeGreaterThanOrEqual(25);
    const listed = (await t.rest('GET', `${PREFIX}/usage?limit=100`, { key })).body.data.items;
    expect(listed).toHaveLength(ok);
  });
});

describe('quotes and checkout', () => {
  it('quotes in NGN and USD with the price table; bad bodies are 400', async () => {
    const { key } = await t.createKey();
    const q = await t.rest('POST', `${PREFIX}/top-ups/quote`, { key, body: { credits: 250, currency: 'NGN' } });
    expect(q.status).toBe(201);
    expect(q.body.data).toEqual({
      id: expect.stringMatching(UUID),
      credits: 250,
      currency: 'NGN',
      unit_price_minor: 1500,
      price_minor: 375000,
      expires_at: expect.stringMatching(ISO),
      created_at: expect.stringMatching(ISO),
    });
    expect(Date.parse(q.body.data.expires_at) - Date.parse(q.body.data.created_at)).toBe(15 * 60 * 1000);
    const usd = await t.rest('POST', `${PREFIX}/top-ups/quote`, { key, body: { credits: 250, currency: 'USD' } });
    expect(usd.body.data.price_minor).toBe(250);
    for (const body of [
      { credits: 0, currency: 'USD' },
      { credits: 1.5, currency: 'USD' },
      { credits: 10, currency: 'EUR' },
    ]) {
      expect((await t.rest('POST', `${PREFIX}/top-ups/quote`, { key, body })).status).toBe(400);
    }
    expect(await t.rest('POST', `${PREFIX}/top-ups/quote`, { key, body: { credits: 10, currency: 'USD', x: 1 } })).toMatchObject({
      status: 400,
      body: errorBody('invalid_request'),
    });
  });

  it('checkout is exactly once per idempotency key; the webhook credits once however often it comes', async () => {
    const { key } = await t.createKey({ plan: 'pro' });
    const idem = randomUUID();
    const quote = (await t.rest('POST', `${PREFIX}/top-ups/quote`, { key, body: { credits: 300, currency: 'USD' } })).body.data;
    const body = { quote_id: quote.id, idempotency_key: idem, provider: 'test' };
    const [a, b] = await Promise.all([
      t.rest('POST', `${PREFIX}/top-ups/checkout`, { key, body }),
      t.rest('POST', `${PREFIX}/top-ups/checkout`, { key, body }),
    ]);
    expect(a.status).toBe(201);
    expect(b.body.data.id).toBe(a.body.data.id);
    expect(a.body.data).toEqual({
      id: expect.stringMatching(UUID),
      quote_id: quote.id,
      idempotency_key: idem,
      provider: 'test',
      status: 'pending',
      credits: 300,
      currency: 'USD',
      price_minor: 300,
      payment_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/pay\/pay_[0-9a-f]+$/),
      entry_id: null,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
      paid_at: null,
    });
    const other = (await t.rest('POST', `${PREFIX}/top-ups/quote`, { key, body: { credits: 5, currency: 'USD' } })).body.data;
    expect(await t.rest('POST', `${PREFIX}/top-ups/checkout`, { key, body: { ...body, quote_id: other.id } })).toMatchObject({
      status: 409,
      body: errorBody('idempotency_conflict'),
    });

    const [c1, c2] = await Promise.all([
      cli(t, ['payments', 'complete', '--checkout', a.body.data.id]),
      cli(t, ['payments', 'complete', '--checkout', a.body.data.id]),
    ]);
    expect(c1.code).toBe(0);
    expect(c2.code).toBe(0);
    expect(c1.json).toMatchObject({
      id: a.body.data.id,
      status: 'paid',
      entry_id: expect.stringMatching(UUID),
      paid_at: expect.stringMatching(ISO),
    });
    // A third delivery (the stand-in redelivers for a paid payment) changes nothing either.
    expect((await cli(t, ['payments', 'complete', '--checkout', a.body.data.id])).json.status).toBe('paid');
    const balance = (await t.rest('GET', PREFIX, { key })).body.data;
    expect(balance).toMatchObject({ top_ups: 300, available: 1300 });
    // The replayed checkout request still answers the same checkout, now paid.
    expect((await t.rest('POST', `${PREFIX}/top-ups/checkout`, { key, body })).body.data).toMatchObject({ status: 'paid' });
  });

  it('unknown provider 400, unknown or foreign quote 404, expired quote 410, a used quote 409', async () => {
    const { key } = await t.createKey();
    const stranger = await t.createKey();
    const quote = (await t.rest('POST', `${PREFIX}/top-ups/quote`, { key, body: { credits: 10, currency: 'USD' } })).body.data;
    const checkout = (body: object, k = key) => t.rest('POST', `${PREFIX}/top-ups/checkout`, { key: k, body });
    expect(await checkout({ quote_id: quote.id, idempotency_key: 'k1', provider: 'paypal' })).toMatchObject({
      status: 400,
      body: errorBody('invalid_request'), // unknown_provider: the row's enum/bound, refused by the bridge
    });
    expect(await checkout({ quote_id: randomUUID(), idempotency_key: 'k1', provider: 'test' })).toMatchObject({
      status: 404,
      body: errorBody('quote_not_found'),
    });
    expect(await checkout({ quote_id: quote.id, idempotency_key: 'k1', provider: 'test' }, stranger.key)).toMatchObject({
      status: 404,
      body: errorBody('quote_not_found'),
    });
    expect((await checkout({ quote_id: quote.id, idempotency_key: 'k1', provider: 'test' })).status).toBe(201);
    expect(await checkout({ quote_id: quote.id, idempotency_key: 'k2', provider: 'test' })).toMatchObject({
      status: 409,
      body: errorBody('quote_already_used'),
    });
    const old = (await t.rest('POST', `${PREFIX}/top-ups/quote`, { key, body: { credits: 10, currency: 'USD' } })).body.data;
    await t.platform.conn
      .collection('billing_quotes')
      .updateOne({ _id: old.id } as never, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    expect(await checkout({ quote_id: old.id, idempotency_key: 'k3', provider: 'test' })).toMatchObject({
      status: 410,
      body: errorBody('quote_expired'),
    });
  });

  it('a webhook with a bad signature changes nothing', async () => {
    const { key } = await t.createKey({ plan: 'free' });
    const checkout = await openCheckout(t, key, 50, randomUUID());
    const payload = JSON.stringify({
      type: 'payment.succeeded',
      data: { id: 'pay_x', reference: checkout.id, amount_minor: 50, currency: 'USD' },
    });
    const res = await t.rest('POST', '/api/v1/billing/webhooks/payments/test', {
      rawBody: payload,
      headers: {
        'content-type': 'application/json',
        'webhook-id': 'evt_forged',
        'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
        'webhook-signature': 'v1,Zm9yZ2Vk',
      },
    });
    expect(res).toMatchObject({ status: 400, body: errorBody('invalid_signature') });
    expect((await t.rest('GET', PREFIX, { key })).body.data).toMatchObject({ available: 100, top_ups: 0 });
  });
});

describe('funding and permissions', () => {
  it('one preference per product, managed by default', async () => {
    const { key } = await t.createKey();
    const get = await t.rest('GET', `${PREFIX}/funding`, { key });
    expect(get.body).toEqual({
      success: true,
      data: {
        preferences: [
          { product: 'assets', mode: 'managed', updated_at: null },
          { product: 'agents', mode: 'managed', updated_at: null },
          { product: 'workflows', mode: 'managed', updated_at: null },
        ],
      },
    });
    await t.rest('PUT', `${PREFIX}/funding`, { key, body: { product: 'workflows', mode: 'byok' } });
    const put = await t.rest('PUT', `${PREFIX}/funding`, { key, body: { product: 'workflows', mode: 'byok' } });
    expect(put.body.data.preferences[2]).toEqual({ product: 'workflows', mode: 'byok', updated_at: expect.stringMatching(ISO) });
    expect(await t.rest('PUT', `${PREFIX}/funding`, { key, body: { product: 'mail', mode: 'byok' } })).toMatchObject({
      status: 400,
      body: errorBody('invalid_request'), // invalid_product: the row's enum/bound, refused by the bridge
    });
    expect(await t.rest('PUT', `${PREFIX}/funding`, { key, body: { product: 'assets', mode: 'free' } })).toMatchObject({
      status: 400,
      body: errorBody('invalid_request'), // invalid_mode: the row's enum/bound, refused by the bridge
    });
  });

  it('read-only keys read but never quote, check out or change funding; another account sees none of it', async () => {
    const owner = await t.createKey({ plan: 'pro' });
    const reader = await t.createKey({ account: owner.account, role: 'read_only' });
    await credits().recordUsage({ accountId: owner.accountId, product: 'assets', credits: 3, source: 's', idempotencyKey: 'x' });
    expect((await t.rest('GET', PREFIX, { key: reader.key })).body.data.available).toBe(997);
    expect((await t.rest('GET', `${PREFIX}/usage`, { key: reader.key })).body.data.items).toHaveLength(1);
    expect((await t.rest('GET', `${PREFIX}/funding`, { key: reader.key })).status).toBe(200);
    const quote = (await t.rest('POST', `${PREFIX}/top-ups/quote`, { key: owner.key, body: { credits: 10, currency: 'USD' } }))
      .body.data;
    for (const [method, path, body] of [
      ['POST', '/top-ups/quote', { credits: 10, currency: 'USD' }],
      ['POST', '/top-ups/checkout', { quote_id: quote.id, idempotency_key: 'r', provider: 'test' }],
      ['PUT', '/funding', { product: 'assets', mode: 'byok' }],
    ] as const) {
      expect(await t.rest(method, `${PREFIX}${path}`, { key: reader.key, body })).toMatchObject({
        status: 403,
        body: errorBody('read_only_key'),
      });
    }
    const stranger = await t.createKey({ plan: 'pro' });
    expect((await t.rest('GET', PREFIX, { key: stranger.key })).body.data.available).toBe(1000);
    expect((await t.rest('GET', `${PREFIX}/usage`, { key: stranger.key })).body.data.items).toHaveLength(0);
  });
});
