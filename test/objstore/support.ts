import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { OBJECT_EVENTS_TOPIC, type ObjectEvent } from '../../core/events/object-events';
import type { TestPlatform } from '../support/platform';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const bucketPath = (bucketId: string, suffix = '') => `/api/v1/buckets/${bucketId}${suffix}`;

export const errorBody = (code: string) => ({
  success: false,
  error: { code, message: expect.any(String), details: expect.any(Object) },
});

export function objectEvent(accountId: string, bucketId: string, over: Partial<ObjectEvent> = {}): ObjectEvent {
  return {
    event_id: randomUUID(),
    type: 'object.created',
    account_id: accountId,
    bucket_id: bucketId,
    key: `docs/${randomBytes(4).toString('hex')}.txt`,
    asset_id: randomUUID(),
    version: 1,
    size: 11,
    content_type: 'text/plain',
    sha256: randomBytes(32).toString('hex'),
    occurred_at: new Date().toISOString(),
    ...over,
  };
}

/** Publishes object events as the Assets storage core does: `${prefix}.assets.objects`, keyed by bucket. */
export async function publishObjectEvents(t: TestPlatform, events: ObjectEvent[]): Promise<void> {
  await t.platform.bus.publish(events.map((e) => ({ topic: `t${t.id}.${OBJECT_EVENTS_TOPIC}`, key: e.bucket_id, value: e })));
}

export async function waitFor<T>(
  fn: () => Promise<T | null | undefined | false>,
  timeoutMs = 15_000,
  what = 'condition',
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 30));
  }
}

/** A bucket of the key's account, made known to the area by a first object event. */
export async function knownBucket(t: TestPlatform, accountId: string): Promise<string> {
  const bucketId = randomUUID();
  await publishObjectEvents(t, [objectEvent(accountId, bucketId, { key: '.bucket-created' })]);
  const svc = t.platform.services.objstore;
  await waitFor(() => svc.models.BucketFact.findById(bucketId).lean(), 15_000, 'bucket fact');
  return bucketId;
}

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A local push receiver (allowed by OUTBOUND_ALLOW_HOSTS=127.0.0.1); `respond` picks each answer. */
export async function receiver(
  respond: (r: Received) => { status: number; body?: string; delayMs?: number } = () => ({ status: 200 }),
) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const r = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      received.push(r);
      const a = respond(r);
      setTimeout(() => {
        res.writeHead(a.status, { 'content-type': 'text/plain' });
        res.end(a.body ?? 'ok');
      }, a.delayMs ?? 0);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return {
    url,
    received,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
