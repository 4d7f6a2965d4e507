import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Connection } from 'mongoose';
import { config } from '../../core/config';
import type { ObjectEvent } from '../../core/events/object-events';
import { connectMongo, ensureIndexes } from '../../core/mongo';
import type { Principal } from '../../core/principal';
import { ObjstoreService } from '../../subgraphs/objstore/service';
import { PushWorker } from '../../subgraphs/objstore/push-worker';
import { defaultSettings } from '../../subgraphs/objstore/settings';
import { verifyPush } from '../../subgraphs/objstore/signing';

/** The object-store queue rules against the real MongoDB-wire server (no HTTP in front). */
let conn: Connection;
let svc: ObjstoreService;
const settings = defaultSettings({
  OBJSTORE_CLAIM_LEASE_MS: 3000,
  OBJSTORE_PULL_RETRY_DELAY_MS: 0,
  OBJSTORE_PUSH_BACKOFF_BASE_MS: 20,
  OBJSTORE_PUSH_BACKOFF_CAP_MS: 80,
  OBJSTORE_PUSH_TIMEOUT_MS: 1000,
  OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
});

beforeAll(async () => {
  conn = await connectMongo(config().mongodbUri.replace(/\/[^/?]*(\?|$)/, `/t_objq_${randomBytes(4).toString('hex')}$1`));
  svc = new ObjstoreService(conn, settings);
  await ensureIndexes(conn);
});
afterAll(async () => {
  await svc.push.stop();
  await conn.dropDatabase();
  await conn.close();
});

function tenant(): { principal: Principal; bucketId: string } {
  const accountId = randomUUID();
  return {
    principal: { accountId, accountSlug: 'a', plan: 'pro', keyId: 'k', role: 'owner', scopes: [] },
    bucketId: randomUUID(),
  };
}

const event = (p: Principal, bucketId: string, over: Partial<ObjectEvent> = {}): ObjectEvent => ({
  event_id: randomUUID(),
  type: 'object.created',
  account_id: p.accountId,
  bucket_id: bucketId,
  key: `k/${randomBytes(3).toString('hex')}.txt`,
  asset_id: randomUUID(),
  version: 1,
  size: 3,
  content_type: 'text/plain',
  sha256: null,
  occurred_at: new Date().toISOString(),
  ...over,
});

async function pullSub(t = tenant()) {
  await svc.fanout.handle(event(t.principal, t.bucketId)); // the bucket becomes known
  const sub = await svc.subscriptions.create(t.principal, t.bucketId, {});
  return { ...t, sub };
}

describe('fan-out', () => {
  it('makes one delivery per matching subscription, and a replayed event makes none', async () => {
    const t = tenant();
    await svc.fanout.handle(event(t.principal, t.bucketId));
    const img = await svc.subscriptions.create(t.principal, t.bucketId, { prefix: 'img/', suffix: '.png' });
    const all = await svc.subscriptions.create(t.principal, t.bucketId, { eventTypes: ['object.deleted'] });
    const e = event(t.principal, t.bucketId, { key: 'img/a.png' });
    expect(await svc.fanout.handle(e)).toBe(1);
    expect(await svc.fanout.handle(e)).toBe(0);
    expect(await svc.models.Delivery.countDocuments({ subscriptionId: img.id })).toBe(1);
    expect(await svc.models.Delivery.countDocuments({ subscriptionId: all.id })).toBe(0);
  });

  it('ignores an event naming another account for a known bucket, and hides the bucket from others', async () => {
    const t = tenant();
    await svc.fanout.handle(event(t.principal, t.bucketId));
    const other = tenant();
    await svc.subscriptions.create(t.principal, t.bucketId, {});
    expect(await svc.fanout.handle(event(other.principal, t.bucketId))).toBe(0);
    await expect(svc.subscriptions.create(other.principal, t.bucketId, {})).rejects.toMatchObject({
      status: 404,
      code: 'bucket_not_found',
    });
  });
});

describe('pull claims', () => {
  it('20 concurrent consumers never receive the same delivery under live claims', async () => {
    const { principal, bucketId, sub } = await pullSub();
    for (let i = 0; i < 60; i++) await svc.fanout.handle(event(principal, bucketId));
    // A lease longer than the test, so no claim expires while the 20 consumers race.
    const longLease = new ObjstoreService(conn, { ...settings, OBJSTORE_CLAIM_LEASE_MS: 600_000 });
    const batches = await Promise.all(Array.from({ length: 20 }, () => longLease.pull.pull(principal, bucketId, sub.id, 5)));
    const ids = batches.flat().map((d) => d.id);
    expect(new Set(ids).size).toBe(ids.length);
    // Under contention a pull may answer fewer than asked; what is left is there for the next pull.
    const rest = await longLease.pull.pull(principal, bucketId, sub.id, 100);
    expect(new Set([...ids, ...rest.map((d) => d.id)]).size).toBe(60);
    expect(ids.length).toBeGreaterThan(40);
  });

  it('pulling (a claim) and acknowledging need assets:write: an assets:read key can do neither', async () => {
    const { principal, bucketId, sub } = await pullSub();
    await svc.fanout.handle(event(principal, bucketId));
    const reader: Principal = { ...principal, keyId: 'reader', scopes: ['assets:read'] };
    const readOnly: Principal = { ...principal, keyId: 'ro', role: 'read_only', scopes: [] };
    for (const who of [reader, readOnly]) {
      await expect(svc.pull.pull(who, bucketId, sub.id, 10)).rejects.toMatchObject({ status: 403 });
    }
    const [claimed] = await svc.pull.pull(principal, bucketId, sub.id, 10);
    for (const who of [reader, readOnly]) {
      await expect(svc.pull.ack(who, bucketId, claimed.id, { claimId: claimed.claimId })).rejects.toMatchObject({ status: 403 });
    }
    expect((await svc.pull.ack(principal, bucketId, claimed.id, { claimId: claimed.claimId })).status).toBe('completed');
  });

  it('ack retry:false completes; a stale or made-up claim is 409 and leaves the newer claim alone', async () => {
    const { principal, bucketId, sub } = await pullSub();
    await svc.fanout.handle(event(principal, bucketId));
    const [first] = await svc.pull.pull(principal, bucketId, sub.id, 10);
    expect(first.attempt).toBe(1);
    // The claim expires; another consumer reclaims it.
    await new Promise((r) => setTimeout(r, 3100));
    const [second] = await svc.pull.pull(principal, bucketId, sub.id, 10);
    expect(second.id).toBe(first.id);
    expect(second.claimId).not.toBe(first.claimId);
    await expect(svc.pull.ack(principal, bucketId, first.id, { claimId: first.claimId })).rejects.toMatchObject({ status: 409 });
    await expect(svc.pull.ack(principal, bucketId, first.id, { claimId: randomUUID() })).rejects.toMatchObject({ status: 409 });
    // Legacy ack (no claim_id) is refused for a reclaimed delivery.
    await expect(svc.pull.ack(principal, bucketId, first.id, {})).rejects.toMatchObject({ status: 409 });
    const done = await svc.pull.ack(principal, bucketId, first.id, { claimId: second.claimId });
    expect(done.status).toBe('completed');
    await expect(svc.pull.ack(principal, bucketId, first.id, { claimId: second.claimId })).rejects.toMatchObject({ status: 409 });
  });

  it('retry:true makes it available again with a new claim; legacy ack works only for a first unexpired claim', async () => {
    const { principal, bucketId, sub } = await pullSub();
    await svc.fanout.handle(event(principal, bucketId));
    const [a] = await svc.pull.pull(principal, bucketId, sub.id, 10);
    const retried = await svc.pull.ack(principal, bucketId, a.id, { claimId: a.claimId, retry: true });
    expect(retried.status).toBe('available');
    const [b] = await svc.pull.pull(principal, bucketId, sub.id, 10);
    expect(b.id).toBe(a.id);
    expect(b.attempt).toBe(2);
    await expect(svc.pull.ack(principal, bucketId, b.id, {})).rejects.toMatchObject({ status: 409 });
    await svc.pull.ack(principal, bucketId, b.id, { claimId: b.claimId });

    await svc.fanout.handle(event(principal, bucketId));
    const [c] = await svc.pull.pull(principal, bucketId, sub.id, 10);
    expect((await svc.pull.ack(principal, bucketId, c.id, {})).status).toBe('completed');
  });

  it('an expired claim is 409 even before anyone reclaims it', async () => {
    const { principal, bucketId, sub } = await pullSub();
    await svc.fanout.handle(event(principal, bucketId));
    const [a] = await svc.pull.pull(principal, bucketId, sub.id, 10);
    await new Promise((r) => setTimeout(r, 3100));
    await expect(svc.pull.ack(principal, bucketId, a.id, { claimId: a.claimId })).rejects.toMatchObject({
      status: 409,
      code: 'claim_expired',
    });
  });

  it('a paused subscription hands out no claims; resumed, it delivers what waited', async () => {
    const { principal, bucketId, sub } = await pullSub();
    await svc.subscriptions.update(principal, bucketId, sub.id, { enabled: false });
    await svc.fanout.handle(event(principal, bucketId));
    expect(await svc.pull.pull(principal, bucketId, sub.id, 10)).toEqual([]);
    await svc.subscriptions.update(principal, bucketId, sub.id, { enabled: true });
    expect(await svc.pull.pull(principal, bucketId, sub.id, 10)).toHaveLength(1);
  });
});

describe('push', () => {
  let server: http.Server;
  let url: string;
  const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  let answer = 200;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(answer, { 'content-type': 'text/plain' });
        res.end('x'.repeat(5000));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(() => new Promise((r) => server.close(r)));

  it('signs each push, backs off exactly, exhausts at ten, and replays with the same event id', async () => {
    const t = tenant();
    await svc.fanout.handle(event(t.principal, t.bucketId));
    const sub = await svc.subscriptions.create(t.principal, t.bucketId, { deliveryMode: 'push', url });
    expect(sub.signingSecret).toMatch(/^whsec_/);
    answer = 200;
    received.length = 0;
    const e = event(t.principal, t.bucketId);
    await svc.fanout.handle(e);
    await svc.push.drain();
    expect(received).toHaveLength(1);
    const r = received[0];
    expect(
      verifyPush(
        sub.signingSecret!,
        String(r.headers['x-platform-timestamp']),
        r.body,
        String(r.headers['x-platform-signature']),
      ),
    ).toBe(true);
    expect(JSON.parse(r.body)).toMatchObject({ id: e.event_id, type: 'object.created', data: { key: e.key } });
    const [delivered] = (await svc.deliveries.history(t.principal, t.bucketId, sub.id)).items;
    expect(r.headers['x-platform-delivery-id']).toBe(delivered.id);
    expect(delivered.status).toBe('delivered');
    expect(delivered.attempts[0].responseExcerpt).toHaveLength(2048);

    answer = 500;
    received.length = 0;
    const failing = event(t.principal, t.bucketId);
    await svc.fanout.handle(failing);
    const d = await svc.models.Delivery.findOne({ subscriptionId: sub.id, eventId: failing.event_id }).lean();
    // The spec's own schedule (30 s doubling to 1 h) on an injected clock: no waiting.
    const clock = { t: Date.now() };
    const worker = new PushWorker(
      svc.models,
      svc.subscriptions,
      { ...settings, OBJSTORE_PUSH_BACKOFF_BASE_MS: 30_000, OBJSTORE_PUSH_BACKOFF_CAP_MS: 3_600_000 },
      () => clock.t,
    );
    const gaps: number[] = [];
    for (let i = 0; i < 10; i++) {
      await worker.drain();
      const now = await svc.models.Delivery.findById(d!._id).lean();
      expect(now!.attempts).toHaveLength(i + 1);
      if (now!.status === 'pending') {
        gaps.push((now!.visibleAt!.getTime() - clock.t) / 1000);
        clock.t = now!.visibleAt!.getTime();
      }
    }
    const after = await svc.models.Delivery.findById(d!._id).lean();
    expect(after!.status).toBe('exhausted');
    expect(after!.attempts).toHaveLength(10);
    expect(after!.visibleAt).toBeNull();
    expect(received).toHaveLength(10);
    expect(gaps).toEqual([30, 60, 120, 240, 480, 960, 1920, 3600, 3600]);

    answer = 200;
    const [r1, r2] = await Promise.all([
      svc.deliveries.replay(t.principal, t.bucketId, d!._id),
      svc.deliveries.replay(t.principal, t.bucketId, d!._id),
    ]);
    expect(r1.status).toBe('pending');
    expect(r2.status).toBe('pending');
    await svc.push.drain();
    const replayed = await svc.models.Delivery.findById(d!._id).lean();
    expect(replayed!.status).toBe('delivered');
    expect(replayed!.attempts).toHaveLength(11);
    expect(received.filter((x) => JSON.parse(x.body).id === failing.event_id)).toHaveLength(11);
    expect(await svc.models.Delivery.countDocuments({ subscriptionId: sub.id, eventId: failing.event_id })).toBe(1);
  });
});
