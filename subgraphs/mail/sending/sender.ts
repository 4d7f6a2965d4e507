import nodemailer, { type Transporter } from 'nodemailer';
import type { Attachment } from 'nodemailer/lib/mailer';
import '../../../core/asset-files';
import { badRequest, forbidden, notFound } from '../../../core/errors';
import { DueWorkLoop } from '../../../core/due-work-loop';
import { outboxPush, type OutboxEvent } from '../../../core/events/outbox';
import { newId } from '../../../core/ids';
import type { Logger } from '../../../core/logger';
import type { Ports } from '../../../core/ports';
import { type Principal, requireScope, requireWriter, requirePrincipal } from '../../../core/principal';
import { mailEvent, type MailEventType } from '../events';
import type { MessageAttachment, MessageDoc, RecipientStatus, SendingModels, TimelineItem } from './model';

/** The scope an attachment needs besides `mail:write`: reading the account's assets. */
export const ATTACHMENT_SCOPE = 'assets:read';

/**
 * `POST /v1/mail/send` and the durable sender behind it. A message is one document: its status,
 * per-recipient outcome, timeline and the events still to publish change together in one update.
 * The sender claims due messages with a lease (a crashed sender's claim expires and another takes
 * it), hands them to SMTP with nodemailer, retries 4xx answers with backoff, and turns a 5xx into a
 * bounce and a suppression. Suppressed addresses are never sent to again.
 */
export interface SendInput {
  from: string;
  to: string | string[];
  cc?: string[];
  bcc?: string[];
  subject: string;
  html?: string | null;
  text?: string | null;
  tags?: string[];
  /** Assets ids sent as attachments (the versions current now are the ones sent). */
  attachments?: string[];
}

export interface SenderOptions {
  smtpUrl: string;
  /** First retry after this long, doubling per attempt (default 30 s). */
  retryBaseMs: number;
  /** Longest wait between attempts (1 h). */
  retryMaxMs: number;
  /** Attempts before a message that keeps being deferred fails (default 8). */
  maxAttempts: number;
  /** How long a claim lasts before another sender may take the message (60 s). */
  leaseMs: number;
  /** Idle scan interval (1 s); a send nudges the sender at once. */
  pollMs: number;
}

/** Most recipients per message across to, cc and bcc. */
export const MAX_RECIPIENTS = 50;
/** Attachments per message, and their total size: what common relays accept (spec: "not shown"). */
export const MAX_ATTACHMENTS = 10;
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
const ADDRESS = /^[^\s@<>(),;:"[\]]+@[^\s@<>(),;:"[\]]+\.[^\s@<>(),;:"[\]]+$/;

/** `Name <a@b>` or `a@b` → `a@b` in lower case; anything else is `invalid_address`. */
export function bareAddress(input: string): string {
  const m = /<([^<>]+)>\s*$/.exec(input);
  const addr = (m ? m[1] : input).trim().toLowerCase();
  if (!ADDRESS.test(addr) || addr.length > 320)
    throw badRequest('invalid_address', `"${input.slice(0, 100)}" is not an email address`);
  return addr;
}

const item = (
  type: MailEventType,
  label: string,
  metadata: Record<string, unknown> | null = null,
  at = new Date(),
): TimelineItem => ({
  type,
  label,
  createdAt: at,
  metadata,
});

export function isTestKey(p: Principal): boolean {
  return p.mode === 'test';
}

export class SendService {
  private transport: Transporter | null = null;
  private readonly loop: DueWorkLoop;

  constructor(
    private readonly models: SendingModels,
    private readonly ports: Ports,
    private readonly topic: string,
    private readonly opts: SenderOptions,
    private readonly log: Logger,
    /** Called after a write that queued events, so the outbox relay publishes at once. */
    private readonly onEvents: () => void = () => undefined,
  ) {
    this.loop = new DueWorkLoop({
      name: 'mail-sender',
      log,
      pollMs: opts.pollMs,
      drain: () => this.sendDue(),
      nextDueInMs: () => this.msUntilNextDue(),
    });
  }

  private events(
    doc: Pick<MessageDoc, '_id' | 'accountId'>,
    entries: { type: MailEventType; data?: Record<string, unknown> }[],
    at: Date,
  ): OutboxEvent[] {
    return entries.map((e) =>
      mailEvent(
        this.topic,
        {
          type: e.type,
          accountId: doc.accountId,
          resourceType: 'message',
          resourceId: doc._id,
          messageId: doc._id,
          data: e.data ?? {},
        },
        at,
      ),
    );
  }

  async send(principal: Principal | null, input: SendInput): Promise<{ id: string; status: string }> {
    const p = requireWriter(requirePrincipal(principal));
    // An attachment hands on an asset's bytes: the key needs read access to the account's assets
    // (the `assetFiles` port keeps the account boundary), or a mail-only key could mail out private
    // files (decision 0097).
    if ((input.attachments ?? []).length > 0) requireScope(p, ATTACHMENT_SCOPE);
    const from = bareAddress(input.from);
    const to = (Array.isArray(input.to) ? input.to : [input.to]).map(bareAddress);
    const cc = (input.cc ?? []).map(bareAddress);
    const bcc = (input.bcc ?? []).map(bareAddress);
    const all = [...new Set([...to, ...cc, ...bcc])];
    if (to.length === 0) throw badRequest('invalid_recipients', 'to needs at least one address');
    if (all.length > MAX_RECIPIENTS) throw badRequest('invalid_recipients', `at most ${MAX_RECIPIENTS} recipients per message`);
    if (!input.html && !input.text) throw badRequest('invalid_message', 'a message needs html or text');
    if (!(await this.ports.get('senders').isVerified(p.accountId, from))) {
      throw forbidden('sender_not_verified', `${from} is not a verified sender of this account (platform senders verify)`);
    }
    const attachments = await this.attachable(p.accountId, input.attachments ?? []);
    const test = isTestKey(p);
    const now = new Date();
    const id = newId();
    const base = { _id: id, accountId: p.accountId };
    const timeline = [item('mail.message.accepted', 'Accepted', { recipients: all.length }, now)];
    const evts: { type: MailEventType; data?: Record<string, unknown> }[] = [
      { type: 'mail.message.accepted', data: { from, recipients: all.length } },
    ];
    if (!test) {
      timeline.push(item('mail.message.queued', 'Queued for delivery', null, now));
      evts.push({ type: 'mail.message.queued' });
    }
    await this.models.Message.create({
      ...base,
      test,
      from,
      to,
      cc,
      bcc,
      subject: input.subject,
      html: input.html ?? null,
      text: input.text ?? null,
      tags: input.tags ?? [],
      attachments,
      status: test ? 'recorded' : 'queued',
      recipients: all.map((address) => ({ address, status: 'pending' as RecipientStatus, detail: null })),
      attempts: 0,
      nextAttemptAt: test ? null : now,
      leaseUntil: null,
      timeline,
      outbox: outboxPush(this.events(base, evts, now), now).outbox.$each,
      createdAt: now,
      updatedAt: now,
    });
    this.onEvents();
    if (!test) this.nudge();
    return { id, status: test ? 'recorded' : 'queued' };
  }

  async timeline(principal: Principal | null, messageId: string): Promise<TimelineItem[]> {
    const p = requirePrincipal(principal);
    const doc = await this.models.Message.findById(messageId, { accountId: 1, timeline: 1 }).lean();
    if (!doc || doc.accountId !== p.accountId) throw notFound('message_not_found', 'no such message');
    return doc.timeline;
  }

  /**
   * Checks each attachment now, so a bad id is the sender's 400 rather than a failed message later,
   * and pins the version sent: replacing the asset after the send does not change the mail.
   */
  private async attachable(accountId: string, ids: string[]): Promise<MessageAttachment[]> {
    const unique = [...new Set(ids)];
    if (unique.length > MAX_ATTACHMENTS) {
      throw badRequest('invalid_attachments', `at most ${MAX_ATTACHMENTS} attachments per message`);
    }
    const out: MessageAttachment[] = [];
    for (const assetId of unique) {
      const f = await this.ports.get('assetFiles').file(accountId, assetId);
      if (!f) {
        throw badRequest('invalid_attachments', `asset ${assetId} is not a ready, clean asset of this account`, {
          assetId,
        });
      }
      out.push({ assetId, version: f.version, filename: f.filename, contentType: f.contentType, size: f.size });
    }
    const total = out.reduce((n, a) => n + a.size, 0);
    if (total > MAX_ATTACHMENT_BYTES) {
      throw badRequest('invalid_attachments', `attachments total ${total} bytes; at most ${MAX_ATTACHMENT_BYTES}`);
    }
    return out;
  }

  /** The attachments' bytes for SMTP, or the id of the first one whose bytes are gone. */
  private async attachmentStreams(msg: MessageDoc): Promise<{ parts: Attachment[] } | { missing: string }> {
    const parts: Attachment[] = [];
    for (const a of msg.attachments ?? []) {
      const f = await this.ports.get('assetFiles').file(msg.accountId, a.assetId, a.version);
      if (!f) return { missing: a.assetId };
      parts.push({ filename: a.filename, contentType: a.contentType, content: f.open() });
    }
    return { parts };
  }

  // --- the durable sender -------------------------------------------------------------------

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    this.transport?.close();
  }

  nudge(): void {
    this.loop.nudge();
  }

  private async msUntilNextDue(): Promise<number | null> {
    const next = await this.models.Message.findOne({ status: { $in: ['queued', 'deferred'] } }, { nextAttemptAt: 1 })
      .sort({ nextAttemptAt: 1 })
      .lean();
    return next?.nextAttemptAt ? new Date(next.nextAttemptAt).getTime() - Date.now() : null;
  }

  /** Claims and sends due messages; false when none was due. */
  private async sendDue(): Promise<boolean> {
    const now = new Date();
    const due = await this.models.Message.find(
      {
        $or: [
          { status: { $in: ['queued', 'deferred'] }, nextAttemptAt: { $lte: now } },
          { status: 'sending', leaseUntil: { $lte: now } },
        ],
      },
      { _id: 1, status: 1, leaseUntil: 1 },
    )
      .limit(20)
      .lean();
    if (!due.length) return false;
    await Promise.all(due.map((d) => this.claimAndSend(d._id, d.status, d.leaseUntil)));
    return true;
  }

  private async claimAndSend(id: string, status: string, leaseUntil: Date | null): Promise<void> {
    const now = new Date();
    const claimed = await this.models.Message.findOneAndUpdate(
      { _id: id, status, leaseUntil },
      {
        $set: { status: 'sending', leaseUntil: new Date(now.getTime() + this.opts.leaseMs), updatedAt: now },
        $inc: { attempts: 1 },
        $push: { timeline: item('mail.message.sending', 'Handing to the mail server', null, now) },
      },
      { new: true },
    ).lean();
    if (!claimed) return; // another sender took it
    await this.deliver(claimed);
  }

  private smtp(): Transporter {
    this.transport ??= nodemailer.createTransport(this.opts.smtpUrl, { pool: true, maxConnections: 4 } as never);
    return this.transport;
  }

  private async deliver(msg: MessageDoc): Promise<void> {
    const now = new Date();
    const fence = { _id: msg._id, status: 'sending', leaseUntil: msg.leaseUntil };
    const events: { type: MailEventType; data?: Record<string, unknown> }[] = [
      { type: 'mail.message.sending', data: { attempt: msg.attempts } },
    ];
    const timeline: TimelineItem[] = [];
    const recipients = msg.recipients.map((r) => ({ ...r }));

    // Suppressed addresses are never handed to SMTP.
    const open = recipients.filter((r) => r.status === 'pending' || r.status === 'deferred');
    const suppressed = await this.models.Suppression.find(
      { _id: { $in: open.map((r) => `${msg.accountId}:${r.address}`) } },
      { address: 1 },
    ).lean();
    const blocked = new Set(suppressed.map((s) => s.address));
    for (const r of open) if (blocked.has(r.address)) r.status = 'suppressed';
    if (blocked.size) {
      events.push({ type: 'mail.message.suppressed', data: { recipients: [...blocked] } });
      timeline.push(item('mail.message.suppressed', 'Not sent to suppressed recipients', { recipients: [...blocked] }, now));
    }

    const targets = recipients.filter((r) => r.status === 'pending' || r.status === 'deferred');
    // An attachment deleted since the send cannot be sent: the message fails, nothing half-sent.
    const files = targets.length ? await this.attachmentStreams(msg) : { parts: [] };
    if ('missing' in files) {
      const data = { reason: 'attachment_unavailable', assetId: files.missing };
      events.push({ type: 'mail.message.failed', data });
      timeline.push(item('mail.message.failed', 'Failed: an attachment is no longer available', data, now));
      const updated = await this.models.Message.updateOne(fence, {
        $set: { status: 'failed', nextAttemptAt: null, leaseUntil: null, updatedAt: now },
        $push: { timeline: { $each: timeline }, ...outboxPush(this.events(msg, events, now), now) },
      });
      if (updated.modifiedCount === 1) this.onEvents();
      return;
    }
    let accepted: string[] = [];
    const rejected = new Map<string, { code: number; response: string }>();
    let transportError: string | null = null;
    if (targets.length) {
      const addresses = targets.map((r) => r.address);
      try {
        const info = await this.smtp().sendMail({
          envelope: { from: msg.from, to: addresses },
          from: msg.from,
          to: msg.to,
          cc: msg.cc,
          subject: msg.subject,
          html: msg.html ?? undefined,
          text: msg.text ?? undefined,
          attachments: files.parts.length ? files.parts : undefined,
          messageId: `<${msg._id}@platform.mail>`,
          headers: msg.tags.length ? { 'X-Platform-Tags': msg.tags.join(',') } : undefined,
        });
        accepted = (info.accepted as (string | { address: string })[]).map((a) =>
          (typeof a === 'string' ? a : a.address).toLowerCase(),
        );
        for (const e of (info as { rejectedErrors?: { recipient?: string; responseCode?: number; response?: string }[] })
          .rejectedErrors ?? []) {
          if (e.recipient) rejected.set(e.recipient.toLowerCase(), { code: e.responseCode ?? 450, response: e.response ?? '' });
        }
      } catch (e) {
        const err = e as {
          responseCode?: number;
          response?: string;
          rejectedErrors?: { recipient?: string; responseCode?: number; response?: string }[];
          message: string;
        };
        if (err.rejectedErrors?.length) {
          for (const r of err.rejectedErrors)
            if (r.recipient) rejected.set(r.recipient.toLowerCase(), { code: r.responseCode ?? 450, response: r.response ?? '' });
        } else if (err.responseCode && err.responseCode >= 500) {
          for (const a of addresses) rejected.set(a, { code: err.responseCode, response: err.response ?? err.message });
        } else transportError = err.response ?? err.message;
      }
      for (const r of targets) {
        const rej = rejected.get(r.address);
        if (accepted.includes(r.address)) r.status = 'delivered';
        else if (rej && rej.code >= 500) {
          r.status = 'bounced';
          r.detail = `${rej.code} ${rej.response}`.slice(0, 300);
        } else {
          r.status = 'deferred';
          r.detail = rej ? `${rej.code} ${rej.response}`.slice(0, 300) : (transportError ?? 'not accepted').slice(0, 300);
        }
      }
    }

    const delivered = targets.filter((r) => r.status === 'delivered').map((r) => r.address);
    const bounced = targets.filter((r) => r.status === 'bounced');
    const deferred = targets.filter((r) => r.status === 'deferred');
    if (delivered.length) {
      events.push({ type: 'mail.message.mta_accepted', data: { recipients: delivered } });
      timeline.push(item('mail.message.mta_accepted', 'Accepted by the mail server', { recipients: delivered }, now));
      events.push({ type: 'mail.delivery.delivered', data: { recipients: delivered } });
      timeline.push(item('mail.delivery.delivered', 'Delivered', { recipients: delivered }, now));
    }
    for (const b of bounced) {
      events.push({ type: 'mail.message.bounced', data: { recipient: b.address, bounceType: 'hard', response: b.detail } });
      timeline.push(item('mail.message.bounced', 'Bounced (hard)', { recipient: b.address, response: b.detail }, now));
    }

    let status: MessageDoc['status'];
    let nextAttemptAt: Date | null = null;
    if (deferred.length && msg.attempts < this.opts.maxAttempts) {
      status = 'deferred';
      const wait = Math.min(this.opts.retryMaxMs, this.opts.retryBaseMs * 2 ** (msg.attempts - 1));
      nextAttemptAt = new Date(now.getTime() + wait);
      const data = {
        recipients: deferred.map((r) => r.address),
        attempt: msg.attempts,
        nextAttemptAt: nextAttemptAt.toISOString(),
        response: deferred[0].detail,
      };
      events.push({ type: 'mail.delivery.delayed', data });
      timeline.push(item('mail.delivery.delayed', 'Delayed; will retry', data, now));
    } else if (deferred.length) {
      status = 'failed';
      events.push({ type: 'mail.message.failed', data: { recipients: deferred.map((r) => r.address), attempts: msg.attempts } });
      timeline.push(item('mail.message.failed', 'Failed after retries', { attempts: msg.attempts }, now));
    } else if (recipients.some((r) => r.status === 'delivered')) status = 'delivered';
    else if (recipients.some((r) => r.status === 'bounced')) status = 'bounced';
    else status = 'suppressed';

    const updated = await this.models.Message.updateOne(fence, {
      $set: { status, recipients, nextAttemptAt, leaseUntil: null, updatedAt: now },
      $push: { timeline: { $each: timeline }, ...outboxPush(this.events(msg, events, now), now) },
    });
    if (updated.modifiedCount === 0) return; // our lease was lost; the new holder decides
    this.onEvents();
    // A hard bounce suppresses the address for the account (idempotent on the address).
    for (const b of bounced) await this.suppress(msg.accountId, b.address, msg._id, b.detail ?? 'hard bounce');
  }

  private async suppress(accountId: string, address: string, messageId: string, reason: string): Promise<void> {
    const now = new Date();
    const _id = `${accountId}:${address}`;
    const event = mailEvent(
      this.topic,
      {
        type: 'mail.suppression.created',
        accountId,
        resourceType: 'suppression',
        resourceId: _id,
        messageId,
        data: { address, reason },
      },
      now,
    );
    try {
      await this.models.Suppression.create({
        _id,
        accountId,
        address,
        reason,
        messageId,
        createdAt: now,
        outbox: outboxPush([event], now).outbox.$each,
      });
    } catch (e) {
      if ((e as { code?: number }).code !== 11000) throw e;
    }
  }
}
