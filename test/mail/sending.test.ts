import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { MailServices } from '../../subgraphs/mail/service';
import { startSmtpSink, type SmtpSink } from '../../subgraphs/mail/smtp-sink';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/** Sending, timelines, suppression and signed webhooks against the real SMTP sink, bridge and Kafka. */
let t: TestPlatform;
let sink: SmtpSink;
let receiver: Server;
let receiverUrl: string;
interface Received {
  headers: IncomingMessage['headers'];
  body: string;
}
const received: Received[] = [];
/** Answer 500 to the first request carrying each of these webhook ids. */
const failOnce = new Set<string>();
const failedOnce = new Set<string>();

beforeAll(async () => {
  sink = await startSmtpSink({ keepRaw: true });
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      const id = String(req.headers['webhook-id']);
      const type = JSON.parse(body).type as string;
      if (failOnce.has(type) && !failedOnce.has(id)) {
        failedOnce.add(id);
        res.writeHead(500).end('try later');
        return;
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  t = await startTestPlatform({
    MAIL_SMTP_URL: sink.url,
    MAIL_SEND_RETRY_BASE_MS: '300',
    MAIL_WEBHOOK_RETRY_BASE_MS: '300',
    OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
  });
});
afterAll(async () => {
  await t?.stop();
  await sink?.stop();
  await new Promise((r) => receiver?.close(r));
});

const tag = () => randomBytes(4).toString('hex');

async function tenant() {
  const k = await t.createKey();
  const from = `hello-${tag()}@sender.test`;
  await t.platform.services.identity.senders.verify(k.accountId, from);
  return { ...k, from };
}

async function until<T>(what: string, fn: () => Promise<T | undefined | null | false>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const timelineOf = async (key: string, id: string) =>
  (await t.rest('GET', `/v1/mail/messages/${id}/timeline`, { key })).body.data.items as { type: string }[];
const types = (items: { type: string }[]) => items.map((i) => i.type);

describe('POST /v1/mail/send', () => {
  it("records a test key's mail and never hands it to SMTP; a test key cannot use the checklist", async () => {
    const k = await t.createKey({ mode: 'test' });
    const from = `hello-${tag()}@sender.test`;
    await t.platform.services.identity.senders.verify(k.accountId, from);
    const to = `test-${tag()}@rcpt.test`;
    const res = await t.rest('POST', '/v1/mail/send', { key: k.key, body: { from, to, subject: 'Hi', text: 'Hello' } });
    expect(res.status).toBe(202);
    expect(res.body.data).toEqual({ id: expect.any(String), status: 'recorded' });
    const items = await until('accepted', async () => {
      const tl = await timelineOf(k.key, res.body.data.id);
      return tl.length > 0 && tl;
    });
    expect(types(items)[0]).toBe('mail.message.accepted');
    // A live message sent after it reaches the sink; the test one never does.
    const live = await tenant();
    const liveTo = `live-${tag()}@rcpt.test`;
    const sent = await t.rest('POST', '/v1/mail/send', {
      key: live.key,
      body: { from: live.from, to: liveTo, subject: 'Hi', text: 'x' },
    });
    await until('the live message at the sink', async () => sink.received.some((m) => m.to.includes(liveTo)));
    expect(sent.status).toBe(202);
    expect(sink.received.some((m) => m.to.includes(to))).toBe(false);
    const checklist = await t.rest('GET', '/v1/mail/migration/checklist', { key: k.key });
    expect([checklist.status, checklist.body.error?.code]).toEqual([403, 'live_key_required']);
  });

  it('delivers to the SMTP sink: accepted → queued → sending → mta_accepted → delivered', async () => {
    const { key, from } = await tenant();
    const to = `ok-${tag()}@rcpt.test`;
    const res = await t.rest('POST', '/v1/mail/send', {
      key,
      body: { from, to, subject: 'Hi', text: 'Hello', tags: ['welcome'] },
    });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ success: true, data: { id: expect.any(String), status: 'queued' } });
    const id = res.body.data.id;
    const items = await until('delivered', async () => {
      const tl = await timelineOf(key, id);
      return types(tl).includes('mail.delivery.delivered') && tl;
    });
    expect(types(items)).toEqual([
      'mail.message.accepted',
      'mail.message.queued',
      'mail.message.sending',
      'mail.message.mta_accepted',
      'mail.delivery.delivered',
    ]);
    expect(items[0]).toEqual({
      type: 'mail.message.accepted',
      label: expect.any(String),
      createdAt: expect.any(String),
      metadata: { recipients: 1 },
    });
    expect(sink.received.some((m) => m.to.includes(to) && m.messageId === `<${id}@platform.mail>`)).toBe(true);
  });

  it('retries a 4xx: delayed, then delivered', async () => {
    const { key, from } = await tenant();
    const to = `defer+${tag()}@rcpt.test`;
    const { body } = await t.rest('POST', '/v1/mail/send', { key, body: { from, to: [to], subject: 'Later', html: '<p>x</p>' } });
    const items = await until('delayed then delivered', async () => {
      const tl = await timelineOf(key, body.data.id);
      return types(tl).includes('mail.delivery.delivered') && tl;
    });
    expect(types(items)).toEqual([
      'mail.message.accepted',
      'mail.message.queued',
      'mail.message.sending',
      'mail.delivery.delayed',
      'mail.message.sending',
      'mail.message.mta_accepted',
      'mail.delivery.delivered',
    ]);
  });

  it('a 5xx bounces and suppresses the address; the next send to it is suppressed, not sent', async () => {
    const { key, from } = await tenant();
    const to = `bounce+${tag()}@rcpt.test`;
    const first = await t.rest('POST', '/v1/mail/send', { key, body: { from, to, subject: 'A', text: 'a' } });
    const items = await until('bounced', async () => {
      const tl = await timelineOf(key, first.body.data.id);
      return types(tl).includes('mail.message.bounced') && tl;
    });
    expect(types(items)).toEqual([
      'mail.message.accepted',
      'mail.message.queued',
      'mail.message.sending',
      'mail.message.bounced',
    ]);
    // The suppression is recorded by the event store; wait for it, then send again.
    await until('suppression event', async () => {
      const ev = await t.rest('GET', '/v1/mail/events?type=mail.suppression.created', { key });
      return ev.body.data.items.length > 0;
    });
    const before = sink.received.length;
    const second = await t.rest('POST', '/v1/mail/send', { key, body: { from, to, subject: 'B', text: 'b' } });
    const items2 = await until('suppressed', async () => {
      const tl = await timelineOf(key, second.body.data.id);
      return types(tl).includes('mail.message.suppressed') && tl;
    });
    expect(types(items2)).toEqual([
      'mail.message.accepted',
      'mail.message.queued',
      'mail.message.sending',
      'mail.message.suppressed',
    ]);
    expect(sink.received.slice(before).some((m) => m.to.includes(to))).toBe(false);
    const ev = await until('suppressed event', async () => {
      const r = await t.rest('GET', `/v1/mail/events?messageId=${second.body.data.id}&type=mail.message.suppressed`, { key });
      return r.body.data.items.length > 0 && r.body.data.items;
    });
    expect(ev[0]).toMatchObject({
      type: 'mail.message.suppressed',
      resourceType: 'message',
      resourceId: second.body.data.id,
      messageId: second.body.data.id,
    });
  });

  it('refuses an unverified sender, and another account sees nothing of a message', async () => {
    const { key, from } = await tenant();
    const bad = await t.rest('POST', '/v1/mail/send', {
      key,
      body: { from: `other-${tag()}@sender.test`, to: 'x@rcpt.test', subject: 's', text: 't' },
    });
    expect(bad.status).toBe(403);
    expect(bad.body.error.code).toBe('sender_not_verified');
    const sent = await t.rest('POST', '/v1/mail/send', {
      key,
      body: { from, to: `ok-${tag()}@rcpt.test`, subject: 's', text: 't' },
    });
    const other = await t.createKey();
    expect((await t.rest('GET', `/v1/mail/messages/${sent.body.data.id}/timeline`, { key: other.key })).status).toBe(404);
    const theirs = await t.rest('GET', `/v1/mail/events?messageId=${sent.body.data.id}`, { key: other.key });
    expect(theirs.body.data.items).toEqual([]);
    expect((await t.rest('POST', '/v1/mail/send', { body: { from, to: 'x@rcpt.test', subject: 's', text: 't' } })).status).toBe(
      401,
    );
  });

  it('attaches Assets by id: the bytes reach the SMTP sink; unknown, foreign and too many ids are 400', async () => {
    const { key, from } = await tenant();
    const upload = async (k: string, content: string, name: string) => {
      const fd = new FormData();
      fd.append('file', new Blob([content]), name);
      const r = await fetch(`${t.bridgeUrl}/api/v1/assets/upload`, {
        method: 'POST',
        headers: { authorization: `Bearer ${k}` },
        body: fd,
      });
      expect(r.status).toBe(201);
      return ((await r.json()) as { data: { id: string } }).data.id;
    };
    const content = `quarterly numbers ${tag()}`;
    const assetId = await upload(key, content, 'report.txt');
    const to = `att-${tag()}@rcpt.test`;
    const send = (body: Record<string, unknown>) =>
      t.rest('POST', '/v1/mail/send', { key, body: { from, to, subject: 'Report', text: 'attached', ...body } });
    const res = await send({ attachments: [assetId] });
    expect(res.status).toBe(202);
    const got = await until('the message at the sink', async () => sink.received.find((m) => m.to.includes(to)));
    expect(got.raw).toContain('filename=report.txt');
    expect(got.raw).toContain(Buffer.from(content).toString('base64'));

    const unknown = await send({ attachments: ['00000000-0000-4000-8000-000000000000'] });
    expect([unknown.status, unknown.body.error.code]).toEqual([400, 'invalid_attachments']);
    const other = await t.createKey();
    const theirs = await upload(other.key, 'not yours', 'x.txt');
    const foreign = await send({ attachments: [theirs] });
    expect([foreign.status, foreign.body.error.code]).toEqual([400, 'invalid_attachments']);
    const many = await send({
      attachments: Array.from({ length: 11 }, (_, i) => `00000000-0000-4000-8000-00000000000${i % 10}${i}`),
    });
    expect([many.status, many.body.error.code]).toEqual([400, 'invalid_attachments']);
  });

  it('a mail-only key cannot attach assets (attaching needs assets:read); its plain sends still go', async () => {
    const { key, from, account } = await tenant();
    const fd = new FormData();
    fd.append('visibility', 'private');
    fd.append('file', new Blob([`private ${tag()}`]), 'secret.txt');
    const up = await fetch(`${t.bridgeUrl}/api/v1/assets/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    });
    expect(up.status).toBe(201);
    const assetId = ((await up.json()) as { data: { id: string } }).data.id;
    const mailOnly = await t.createKey({ account, scopes: ['mail:read', 'mail:write'] });
    const to = `exfil-${tag()}@rcpt.test`;
    const body = { from, to, subject: 'Files', text: 'see attached', attachments: [assetId] };
    const refused = await t.rest('POST', '/v1/mail/send', { key: mailOnly.key, body });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'insufficient_scope', details: { required_scope: 'assets:read' } });
    // Through GraphQL too (the rule is the sender's, not the bridge's).
    const g = await t.gql(
      'mutation($from: String!, $to: [String!]!, $subject: String!, $text: String, $attachments: [ID!]) { sendMail(from: $from, to: $to, subject: $subject, text: $text, attachments: $attachments) { id } }',
      { ...body, to: [to] },
      mailOnly.key,
    );
    expect(g.errors?.[0]?.extensions?.code).toBe('insufficient_scope');
    const plain = await t.rest('POST', '/v1/mail/send', { key: mailOnly.key, body: { ...body, attachments: undefined } });
    expect(plain.status).toBe(202);
    const withRead = await t.createKey({ account, scopes: ['mail:write', 'assets:read'] });
    expect((await t.rest('POST', '/v1/mail/send', { key: withRead.key, body })).status).toBe(202);
  });

  it('lists events with filters and a cursor', async () => {
    const { key, from } = await tenant();
    const sent = await t.rest('POST', '/v1/mail/send', {
      key,
      body: { from, to: `ok-${tag()}@rcpt.test`, subject: 's', text: 't' },
    });
    const id = sent.body.data.id;
    await until('five events', async () => {
      const r = await t.rest('GET', `/v1/mail/events?messageId=${id}`, { key });
      return r.body.data.items.length >= 5;
    });
    const page1 = await t.rest('GET', `/v1/mail/events?messageId=${id}&limit=2`, { key });
    expect(page1.body.data.items).toHaveLength(2);
    expect(page1.body.data.nextCursor).toEqual(expect.any(String));
    const page2 = await t.rest(
      'GET',
      `/v1/mail/events?messageId=${id}&limit=2&cursor=${encodeURIComponent(page1.body.data.nextCursor)}`,
      { key },
    );
    expect(page2.body.data.items).toHaveLength(2);
    const ids = [...page1.body.data.items, ...page2.body.data.items].map((e: { id: string }) => e.id);
    expect(new Set(ids).size).toBe(4);
    const future = await t.rest('GET', `/v1/mail/events?messageId=${id}&from=${new Date(Date.now() + 60_000).toISOString()}`, {
      key,
    });
    expect(future.body.data.items).toEqual([]);
    expect((await t.rest('GET', '/v1/mail/events?limit=0', { key })).status).toBe(400);
  });
});

describe('webhooks', () => {
  it('signs deliveries (Standard Webhooks), retries with the same webhook-id, rotates the secret; the secret is never listed', async () => {
    const { key, from } = await tenant();
    const created = await t.rest('POST', '/v1/mail/webhooks', {
      key,
      body: { url: receiverUrl, eventTypes: ['mail.delivery.delivered', 'mail.message.accepted'] },
    });
    expect(created.status).toBe(201);
    const hook = created.body.data;
    expect(hook).toEqual({
      id: expect.any(String),
      url: receiverUrl,
      eventTypes: ['mail.delivery.delivered', 'mail.message.accepted'],
      description: null,
      enabled: true,
      secret: expect.stringMatching(/^whsec_/),
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const listed = await t.rest('GET', '/v1/mail/webhooks', { key });
    expect(JSON.stringify(listed.body)).not.toContain(hook.secret);
    expect(listed.body.data.items[0].secret).toBeUndefined();
    const mail = t.platform.services.mail as unknown as MailServices;
    const stored = await mail.models.Webhook.findById(hook.id).lean();
    expect(JSON.stringify(stored)).not.toContain(hook.secret.slice(6));

    failOnce.add('mail.delivery.delivered');
    const sent = await t.rest('POST', '/v1/mail/send', {
      key,
      body: { from, to: `ok-${tag()}@rcpt.test`, subject: 's', text: 't' },
    });
    const messageId = sent.body.data.id;
    const mine = () => received.filter((r) => JSON.parse(r.body).data.messageId === messageId);
    const deliveredHooks = await until('two deliveries of delivered', async () => {
      const d = mine().filter((r) => JSON.parse(r.body).type === 'mail.delivery.delivered');
      return d.length >= 2 && d;
    });
    // Same webhook-id on the retry; each verifies with the stock library.
    expect(deliveredHooks[0].headers['webhook-id']).toBe(deliveredHooks[1].headers['webhook-id']);
    const wh = new Webhook(hook.secret);
    for (const r of mine()) {
      const payload = wh.verify(r.body, r.headers as Record<string, string>) as { type: string; data: { messageId: string } };
      expect(payload.data.messageId).toBe(messageId);
    }

    const deliveries = await until('delivery list', async () => {
      const r = await t.rest('GET', `/v1/mail/webhooks/${hook.id}/deliveries?status=succeeded`, { key });
      const items = r.body.data.items.filter((d: { eventType: string }) => d.eventType === 'mail.delivery.delivered');
      return items.length > 0 && items;
    });
    const detail = await t.rest('GET', `/v1/mail/webhook-deliveries/${encodeURIComponent(deliveries[0].id)}`, { key });
    expect(detail.body.data.attempts.map((a: { statusCode: number }) => a.statusCode)).toEqual([500, 204]);
    expect(detail.body.data.attempts[0]).toEqual({
      statusCode: 500,
      durationMs: expect.any(Number),
      at: expect.any(String),
      responseExcerpt: 'try later',
      error: null,
    });
    await until('delivery events', async () => {
      const r = await t.rest('GET', '/v1/mail/events?type=mail.webhook.delivery.failed', { key });
      return r.body.data.items.length > 0;
    });

    // Manual retry: the same webhook-id again.
    const retried = await t.rest('POST', `/v1/mail/webhook-deliveries/${encodeURIComponent(deliveries[0].id)}/retry`, { key });
    expect(retried.status).toBe(202);
    await until('third attempt', async () => {
      const r = await t.rest('GET', `/v1/mail/webhook-deliveries/${encodeURIComponent(deliveries[0].id)}`, { key });
      return r.body.data.attempts.length === 3;
    });

    // Rotation: the new secret signs at once; during the grace period (ROTATION_GRACE_MS, 24 h)
    // the old one signs too, as a second `v1,…` entry, so the stock verifier accepts either.
    const rotated = await t.rest('POST', `/v1/mail/webhooks/${hook.id}/rotate`, { key });
    expect(rotated.body.data.secret).toMatch(/^whsec_/);
    expect(rotated.body.data.secret).not.toBe(hook.secret);
    const sendOne = async () => {
      const s = await t.rest('POST', '/v1/mail/send', {
        key,
        body: { from, to: `ok-${tag()}@rcpt.test`, subject: 's', text: 't' },
      });
      return until('delivery after rotation', async () =>
        received.find((r) => JSON.parse(r.body).data.messageId === s.body.data.id),
      );
    };
    const after = await sendOne();
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(() => new Webhook(rotated.body.data.secret).verify(after.body, after.headers as Record<string, string>)).not.toThrow();
    expect(() => new Webhook(hook.secret).verify(after.body, after.headers as Record<string, string>)).not.toThrow();
    expect(() =>
      new Webhook(`whsec_${randomBytes(24).toString('base64')}`).verify(after.body, after.headers as Record<string, string>),
    ).toThrow();
    const stored2 = await mail.models.Webhook.findById(hook.id).lean();
    const until24h = new Date(stored2!.previousSecretUntil!).getTime() - Date.now();
    expect(until24h).toBeGreaterThan(23.9 * 3600_000);
    expect(until24h).toBeLessThanOrEqual(24 * 3600_000);
    expect(JSON.stringify(stored2)).not.toContain(hook.secret.slice(6));

    // Once the grace period is over, only the new secret signs.
    await mail.models.Webhook.updateOne({ _id: hook.id }, { $set: { previousSecretUntil: new Date(Date.now() - 1000) } });
    const later = await sendOne();
    expect(String(later.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(() => new Webhook(rotated.body.data.secret).verify(later.body, later.headers as Record<string, string>)).not.toThrow();
    expect(() => new Webhook(hook.secret).verify(later.body, later.headers as Record<string, string>)).toThrow();
  });

  it('validates endpoints: unknown event types, private addresses, updates and deletes', async () => {
    const { key } = await t.createKey();
    const unknown = await t.rest('POST', '/v1/mail/webhooks', { key, body: { url: receiverUrl, eventTypes: ['mail.nope'] } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe('invalid_event_types');
    const priv = await t.rest('POST', '/v1/mail/webhooks', {
      key,
      body: { url: 'https://10.0.0.1/x', eventTypes: ['mail.message.accepted'] },
    });
    expect(priv.body.error.code).toBe('invalid_webhook_url');
    const plain = await t.rest('POST', '/v1/mail/webhooks', {
      key,
      body: { url: 'http://example.com/x', eventTypes: ['mail.message.accepted'] },
    });
    expect(plain.body.error.code).toBe('invalid_webhook_url');
    const creds = await t.rest('POST', '/v1/mail/webhooks', {
      key,
      body: { url: 'https://u:p@example.com/x', eventTypes: ['mail.message.accepted'] },
    });
    expect(creds.body.error.code).toBe('invalid_webhook_url');
    const ok = await t.rest('POST', '/v1/mail/webhooks', {
      key,
      body: { url: 'https://hooks.example.com/x', eventTypes: ['mail.message.accepted'], description: 'prod' },
    });
    const id = ok.body.data.id;
    const patched = await t.rest('PATCH', `/v1/mail/webhooks/${id}`, {
      key,
      body: { enabled: false, eventTypes: ['mail.message.bounced'] },
    });
    expect(patched.body.data).toMatchObject({ enabled: false, eventTypes: ['mail.message.bounced'], description: 'prod' });
    const other = await t.createKey();
    expect((await t.rest('PATCH', `/v1/mail/webhooks/${id}`, { key: other.key, body: { enabled: true } })).status).toBe(404);
    expect((await t.rest('DELETE', `/v1/mail/webhooks/${id}`, { key })).status).toBe(204);
    expect((await t.rest('DELETE', `/v1/mail/webhooks/${id}`, { key })).status).toBe(404);
  });
});
