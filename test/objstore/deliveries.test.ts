import { createHmac, timingSafeEqual } from 'node:crypto';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { bucketPath, errorBody, knownBucket, objectEvent, publishObjectEvents, receiver, waitFor } from './support';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform({
    OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
    OBJSTORE_CLAIM_LEASE_MS: '5000',
    OBJSTORE_PULL_RETRY_DELAY_MS: '300',
    OBJSTORE_PUSH_BACKOFF_BASE_MS: '40',
    OBJSTORE_PUSH_BACKOFF_CAP_MS: '160',
    OBJSTORE_PUSH_TIMEOUT_MS: '1000',
    OBJSTORE_PUSH_POLL_MS: '50',
  });
});
afterAll(() => t.stop());

async function subscription(body: Record<string, unknown> = {}) {
  const { key, accountId } = await t.createKey();
  const bucketId = await knownBucket(t, accountId);
  const res = await t.rest('POST', bucketPath(bucketId, '/event-subscriptions'), { key, body });
  if (res.status !== 201) throw new Error(`create: ${res.status} ${JSON.stringify(res.body)}`);
  return { key, accountId, bucketId, sub: res.body.data };
}

const pull = (s: { key: string; bucketId: string; sub: { id: string } }, limit = 10) =>
  t.rest('GET', bucketPath(s.bucketId, `/event-subscriptions/${s.sub.id}/deliveries?limit=${limit}`), { key: s.key });
const ack = (s: { key: string; bucketId: string }, id: string, body: Record<string, unknown>) =>
  t.rest('POST', bucketPath(s.bucketId, `/event-deliveries/${id}/ack`), { key: s.key, body });
const history = (s: { key: string; bucketId: string; sub: { id: string } }, q = '') =>
  t.rest('GET', bucketPath(s.bucketId, `/event-subscriptions/${s.sub.id}/history${q}`), { key: s.key });

async function pullUntil(s: Parameters<typeof pull>[0], n: number, timeoutMs = 15_000) {
  const got: any[] = [];
  await waitFor(
    async () => {
      const res = await pull(s, 100);
      expect(res.status).toBe(200);
      got.push(...res.body.data.items);
      return got.length >= n;
    },
    timeoutMs,
    `${n} pulled deliveries`,
  );
  return got;
}

describe('pull delivery through Kafka and the bridge', () => {
  it('an uploaded object becomes a pulled delivery with claim_id and event_id; ack completes it', async () => {
    const s = await subscription({ prefix: 'img/' });
    const e = objectEvent(s.accountId, s.bucketId, { key: 'img/cat.png' });
    await publishObjectEvents(t, [objectEvent(s.accountId, s.bucketId, { key: 'doc/skip.txt' }), e]);
    const [d] = await pullUntil(s, 1);
    expect(d).toEqual({
      id: expect.any(String),
      claim_id: expect.any(String),
      event_id: e.event_id,
      type: 'object.created',
      data: expect.objectContaining({ key: 'img/cat.png', bucket_id: s.bucketId, asset_id: e.asset_id, size: e.size }),
      claim_expires_at: expect.any(String),
      attempt: 1,
    });
    const done = await ack(s, d.id, { claim_id: d.claim_id, retry: false });
    expect(done.status).toBe(200);
    expect(done.body.data).toMatchObject({ id: d.id, status: 'completed', event_id: e.event_id });
    const again = await ack(s, d.id, { claim_id: d.claim_id });
    expect(again.status).toBe(409);
    const h = await history(s);
    expect(h.body.data.items).toEqual([expect.objectContaining({ id: d.id, status: 'completed', claim_count: 1 })]);
  });

  it('a replayed event (same event_id) never makes a second delivery', async () => {
    const s = await subscription();
    const e = objectEvent(s.accountId, s.bucketId);
    await publishObjectEvents(t, [e, e, e]);
    const marker = objectEvent(s.accountId, s.bucketId);
    await publishObjectEvents(t, [marker, e]);
    const got = await pullUntil(s, 2);
    await new Promise((r) => setTimeout(r, 300));
    got.push(...(await pull(s, 100)).body.data.items);
    // Claims may come back after their lease on a slow machine: count deliveries, not claims.
    const byDelivery = new Map(got.map((d) => [d.id, d.event_id]));
    expect([...byDelivery.values()].sort()).toEqual([e.event_id, marker.event_id].sort());
    expect(await t.platform.services.objstore.models.Delivery.countDocuments({ subscriptionId: s.sub.id })).toBe(2);
  });

  it('retry:true makes it available again (new claim); a stale claim is 409 and the newer lease stands', async () => {
    const s = await subscription();
    await publishObjectEvents(t, [objectEvent(s.accountId, s.bucketId)]);
    const [a] = await pullUntil(s, 1);
    const retried = await ack(s, a.id, { claim_id: a.claim_id, retry: true });
    expect(retried.body.data.status).toBe('available');
    const [b] = await pullUntil(s, 1, 5000);
    expect(b.id).toBe(a.id);
    expect(b.claim_id).not.toBe(a.claim_id);
    expect(b.attempt).toBe(2);
    const stale = await ack(s, a.id, { claim_id: a.claim_id, retry: false });
    expect(stale.status).toBe(409);
    expect(stale.body).toEqual(errorBody('stale_claim'));
    const madeUp = await ack(s, a.id, { claim_id: 'not-a-claim' });
    expect(madeUp.status).toBe(409);
    // Legacy ack (no claim_id) is refused for a retried delivery.
    expect((await ack(s, a.id, {})).status).toBe(409);
    expect((await ack(s, a.id, { claim_id: b.claim_id })).body.data.status).toBe('completed');
  });

  it('a consumer that dies holding claims sees them redelivered after the lease; the old claim is then 409', async () => {
    const s = await subscription();
    await publishObjectEvents(t, [objectEvent(s.accountId, s.bucketId), objectEvent(s.accountId, s.bucketId)]);
    const first = await pullUntil(s, 2);
    expect((await pull(s)).body.data.items).toEqual([]); // live claims: nothing for anyone else
    expect((await ack(s, first[0].id, { claim_id: first[0].claim_id })).status).toBe(200); // one finished in time
    await new Promise((r) => setTimeout(r, 5100));
    const late = await ack(s, first[1].id, { claim_id: first[1].claim_id });
    expect(late.status).toBe(409);
    expect(late.body).toEqual(errorBody('claim_expired'));
    const again = await pullUntil(s, 1);
    expect(again.map((d) => d.id)).toContain(first[1].id);
    expect(again.find((d) => d.id === first[1].id).attempt).toBe(2);
  });

  it('legacy ack without claim_id works for a first unexpired claim', async () => {
    const s = await subscription();
    await publishObjectEvents(t, [objectEvent(s.accountId, s.bucketId)]);
    const [d] = await pullUntil(s, 1);
    const res = await ack(s, d.id, {});
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe('completed');
  });

  it('paused: no claims; resumed: what waited is delivered. DELETE removes deliveries and history', async () => {
    const s = await subscription();
    await t.rest('PATCH', bucketPath(s.bucketId, `/event-subscriptions/${s.sub.id}`), { key: s.key, body: { enabled: false } });
    await publishObjectEvents(t, [objectEvent(s.accountId, s.bucketId)]);
    const svc = t.platform.services.objstore;
    await waitFor(() => svc.models.Delivery.countDocuments({ subscriptionId: s.sub.id }), 15_000, 'queued delivery');
    expect((await pull(s)).body.data.items).toEqual([]);
    await t.rest('PATCH', bucketPath(s.bucketId, `/event-subscriptions/${s.sub.id}`), { key: s.key, body: { enabled: true } });
    expect((await pull(s)).body.data.items).toHaveLength(1);
    const del = await t.rest('DELETE', bucketPath(s.bucketId, `/event-subscriptions/${s.sub.id}`), { key: s.key });
    expect(del.status).toBe(200);
    expect(await svc.models.Delivery.countDocuments({ subscriptionId: s.sub.id })).toBe(0);
    expect((await history(s)).status).toBe(404);
  });

  it('history pages by 50 with next_cursor, newest first', async () => {
    const s = await subscription();
    const events = Array.from({ length: 55 }, () => objectEvent(s.accountId, s.bucketId));
    await publishObjectEvents(t, events);
    const svc = t.platform.services.objstore;
    await waitFor(
      async () => (await svc.models.Delivery.countDocuments({ subscriptionId: s.sub.id })) === 55,
      20_000,
      '55 deliveries',
    );
    const p1 = await history(s);
    expect(p1.body.data.items).toHaveLength(50);
    expect(p1.body.data.next_cursor).toEqual(expect.any(String));
    expect(p1.body.data.next_cursor).not.toBe('');
    const p2 = await history(s, `?cursor=${encodeURIComponent(p1.body.data.next_cursor)}`);
    expect(p2.body.data.items).toHaveLength(5);
    expect(p2.body.data.next_cursor).toBe('');
    const ids = [...p1.body.data.items, ...p2.body.data.items].map((d: { event_id: string }) => d.event_id);
    expect(new Set(ids)).toEqual(new Set(events.map((e) => e.event_id)));
    expect((await history(s, '?limit=51')).status).toBe(400);
  });
});

describe('push delivery', () => {
  it('POSTs {id, type, data} signed over timestamp.rawBody; a stock HMAC verifies it', async () => {
    const r = await receiver();
    try {
      const s = await subscription({ delivery_mode: 'push', url: r.url });
      const secret: string = s.sub.signing_secret;
      const e = objectEvent(s.accountId, s.bucketId, { type: 'object.overwritten' });
      await publishObjectEvents(t, [e]);
      await waitFor(async () => r.received.length >= 1, 15_000, 'a push');
      const got = r.received[0];
      // The receiver of the README: raw body first, timestamp tolerance, then parse.
      const ts = String(got.headers['x-platform-timestamp']);
      const expected = Buffer.from('sha256=' + createHmac('sha256', secret).update(`${ts}.${got.body}`).digest('hex'));
      const given = Buffer.from(String(got.headers['x-platform-signature']));
      expect(given.length === expected.length && timingSafeEqual(given, expected)).toBe(true);
      expect(Math.abs(Date.now() / 1000 - Number(ts))).toBeLessThan(300);
      expect(JSON.parse(got.body)).toEqual({
        id: e.event_id,
        type: 'object.overwritten',
        data: expect.objectContaining({ key: e.key }),
      });
      const h = await waitFor(async () => {
        const res = await history(s);
        return res.body.data.items[0]?.status === 'delivered' ? res : null;
      });
      const d = h.body.data.items[0];
      expect(got.headers['x-platform-delivery-id']).toBe(d.id);
      expect(d.attempts).toEqual([
        { status_code: 200, duration_ms: expect.any(Number), at: expect.any(String), response_excerpt: 'ok', error: null },
      ]);
      expect(JSON.stringify(h.body)).not.toContain(secret);
    } finally {
      await r.close();
    }
  });

  it('retries with backoff, exhausts at the tenth failure, keeps 2 KiB of the answer; replay requeues once', async () => {
    let status = 503;
    const r = await receiver(() => ({ status, body: 'e'.repeat(4000) }));
    try {
      const s = await subscription({ delivery_mode: 'push', url: r.url });
      const e = objectEvent(s.accountId, s.bucketId);
      await publishObjectEvents(t, [e]);
      const exhausted = await waitFor(
        async () => {
          const res = await history(s);
          return res.body.data.items[0]?.status === 'exhausted' ? res.body.data.items[0] : null;
        },
        20_000,
        'exhaustion',
      );
      expect(exhausted.attempts).toHaveLength(10);
      expect(exhausted.failure_count).toBe(10);
      expect(exhausted.attempts[0].response_excerpt).toHaveLength(2048);
      expect(exhausted.attempts.every((a: { status_code: number }) => a.status_code === 503)).toBe(true);
      expect(r.received).toHaveLength(10);
      expect(new Set(r.received.map((x) => JSON.parse(x.body).id))).toEqual(new Set([e.event_id]));

      status = 200;
      const path = bucketPath(s.bucketId, `/event-deliveries/${exhausted.id}/replay`);
      const [a, b] = await Promise.all([t.rest('POST', path, { key: s.key }), t.rest('POST', path, { key: s.key })]);
      expect(a.status).toBe(202);
      expect(b.status).toBe(202);
      const delivered = await waitFor(async () => {
        const res = await history(s);
        return res.body.data.items[0]?.status === 'delivered' ? res.body.data.items[0] : null;
      });
      expect(delivered.id).toBe(exhausted.id);
      expect(delivered.event_id).toBe(e.event_id);
      expect(delivered.attempts).toHaveLength(11);
      expect((await history(s)).body.data.items).toHaveLength(1);
      await new Promise((res) => setTimeout(res, 200));
      expect(r.received).toHaveLength(11);
    } finally {
      await r.close();
    }
  });

  it('pause holds pushes; resume sends what waited; replay of a pull delivery is 409', async () => {
    const r = await receiver();
    try {
      const s = await subscription({ delivery_mode: 'push', url: r.url });
      const subPath = bucketPath(s.bucketId, `/event-subscriptions/${s.sub.id}`);
      await t.rest('PATCH', subPath, { key: s.key, body: { enabled: false } });
      await publishObjectEvents(t, [objectEvent(s.accountId, s.bucketId)]);
      const svc = t.platform.services.objstore;
      await waitFor(() => svc.models.Delivery.countDocuments({ subscriptionId: s.sub.id }), 15_000, 'queued');
      await new Promise((res) => setTimeout(res, 400));
      expect(r.received).toHaveLength(0);
      await t.rest('PATCH', subPath, { key: s.key, body: { enabled: true } });
      await waitFor(async () => r.received.length === 1, 10_000, 'push after resume');

      const p = await subscription();
      await publishObjectEvents(t, [objectEvent(p.accountId, p.bucketId)]);
      const [d] = await pullUntil(p, 1);
      const res = await t.rest('POST', bucketPath(p.bucketId, `/event-deliveries/${d.id}/replay`), { key: p.key });
      expect(res.status).toBe(409);
      expect(res.body).toEqual(errorBody('not_a_push_delivery'));
    } finally {
      await r.close();
    }
  });

  it('rotation: later pushes carry the new signature', async () => {
    const r = await receiver();
    try {
      const s = await subscription({ delivery_mode: 'push', url: r.url });
      const rotated = await t.rest('PATCH', bucketPath(s.bucketId, `/event-subscriptions/${s.sub.id}`), {
        key: s.key,
        body: { rotate_secret: true },
      });
      const secret = rotated.body.data.signing_secret;
      await publishObjectEvents(t, [objectEvent(s.accountId, s.bucketId)]);
      await waitFor(async () => r.received.length === 1, 15_000, 'a push');
      const got = r.received[0];
      const ts = String(got.headers['x-platform-timestamp']);
      expect(got.headers['x-platform-signature']).toBe(
        'sha256=' + createHmac('sha256', secret).update(`${ts}.${got.body}`).digest('hex'),
      );
    } finally {
      await r.close();
    }
  });

  it('a redirect is a failed attempt (never followed); a host that does not resolve is refused at send', async () => {
    const r = await receiver(() => ({ status: 302, body: 'moved' }));
    try {
      const s = await subscription({ delivery_mode: 'push', url: r.url });
      await publishObjectEvents(t, [objectEvent(s.accountId, s.bucketId)]);
      const d = await waitFor(async () => (await history(s)).body.data.items[0]?.attempts[0], 15_000, 'an attempt');
      expect(d).toMatchObject({ status_code: 302, error: 'redirects are not followed' });
      // Later requests are backoff retries of the same delivery to the same url, not a followed redirect.
      expect(new Set(r.received.map((x) => x.headers['x-platform-delivery-id'])).size).toBe(1);

      const n = await subscription({ delivery_mode: 'push', url: 'https://hooks.does-not-exist.invalid/in' });
      await publishObjectEvents(t, [objectEvent(n.accountId, n.bucketId)]);
      const a = await waitFor(async () => (await history(n)).body.data.items[0]?.attempts[0], 15_000, 'an attempt');
      expect(a).toMatchObject({ status_code: null, error: expect.stringContaining('does not resolve') });
      // Backoff here is 40 ms doubling to 160 ms, so later attempts may already have followed.
      const item = (await history(n)).body.data.items[0];
      expect(item.failure_count).toBeGreaterThanOrEqual(1);
      expect(item.attempts.every((x: { status_code: number | null }) => x.status_code === null)).toBe(true);
      expect(['pending', 'exhausted']).toContain(item.status);
    } finally {
      await r.close();
    }
  });
});
