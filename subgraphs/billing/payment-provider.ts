import { Webhook } from 'standardwebhooks';
import { PlatformError, badRequest } from '../../core/errors';
import type { Currency } from './model';

/** What the platform asks of a payment provider (a real adapter implements the same). */
export interface PaymentProvider {
  readonly name: string;
  /** Opens a payment for `reference` (the checkout id); the same reference gives the same payment. */
  createPayment(req: {
    reference: string;
    amountMinor: number;
    currency: Currency;
    description: string;
    webhookUrl: string;
  }): Promise<{ paymentId: string; paymentUrl: string }>;
  /** Verifies a webhook delivery over its exact raw body; throws 400 `invalid_signature` otherwise. */
  verifyWebhook(rawBody: string, headers: Record<string, string | string[] | undefined>): PaymentEvent;
}

/** A payment event as the platform understands it (provider-neutral). */
export interface PaymentEvent {
  eventId: string;
  type: 'payment.succeeded' | string;
  paymentId: string;
  reference: string;
  amountMinor: number;
  currency: string;
}

/** Default webhook secret shared with the local stand-in (Standard Webhooks `whsec_` form). */
export const DEV_WEBHOOK_SECRET = `whsec_${Buffer.from('dev-payment-webhook-secret-change-me').toString('base64')}`;

/** Signs and verifies Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`). */
export function webhookSigner(secret: string): Webhook {
  return new Webhook(secret);
}

const one = (v: string | string[] | undefined): string => (Array.isArray(v) ? (v[0] ?? '') : (v ?? ''));

/**
 * The `test` provider: the local payment-provider stand-in (or anything at PAYMENT_PROVIDER_URL that
 * speaks its small HTTP API). Webhooks are Standard Webhooks signed with the shared secret.
 */
export class TestPaymentProvider implements PaymentProvider {
  readonly name = 'test';
  private readonly webhook: Webhook;

  constructor(
    private readonly baseUrl: () => string | undefined,
    secret: string,
  ) {
    this.webhook = webhookSigner(secret);
  }

  async createPayment(req: {
    reference: string;
    amountMinor: number;
    currency: Currency;
    description: string;
    webhookUrl: string;
  }): Promise<{ paymentId: string; paymentUrl: string }> {
    const body = await this.call('POST', '/v1/payments', {
      reference: req.reference,
      amount_minor: req.amountMinor,
      currency: req.currency,
      description: req.description,
      webhook_url: req.webhookUrl,
    });
    return { paymentId: String(body.id), paymentUrl: String(body.payment_url) };
  }

  /** Asks the stand-in to confirm the payment, which it does by delivering the signed webhook. */
  async complete(paymentId: string, baseUrl?: string): Promise<Record<string, unknown>> {
    return this.call('POST', `/v1/payments/${encodeURIComponent(paymentId)}/complete`, {}, baseUrl);
  }

  verifyWebhook(rawBody: string, headers: Record<string, string | string[] | undefined>): PaymentEvent {
    let payload: { type?: string; data?: Record<string, unknown> };
    try {
      payload = this.webhook.verify(rawBody, {
        'webhook-id': one(headers['webhook-id']),
        'webhook-timestamp': one(headers['webhook-timestamp']),
        'webhook-signature': one(headers['webhook-signature']),
      }) as typeof payload;
    } catch {
      throw badRequest('invalid_signature', 'webhook signature, timestamp or id is missing or does not match');
    }
    const d = payload.data ?? {};
    return {
      eventId: one(headers['webhook-id']),
      type: String(payload.type ?? ''),
      paymentId: String(d.id ?? ''),
      reference: String(d.reference ?? ''),
      amountMinor: Number(d.amount_minor),
      currency: String(d.currency ?? ''),
    };
  }

  private async call(method: string, path: string, body: unknown, base = this.baseUrl()): Promise<Record<string, unknown>> {
    if (!base) throw new PlatformError('payment_provider_unavailable', 503, 'the payment provider is not configured', {}, true);
    let res: Response;
    try {
      res = await fetch(new URL(path, base), {
        method,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      });
    } catch {
      throw new PlatformError('payment_provider_unavailable', 503, 'the payment provider did not answer', {}, true);
    }
    const json = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    if (!res.ok) {
      throw new PlatformError('payment_provider_error', 502, `the payment provider refused the request (${res.status})`, {
        provider_status: res.status,
      });
    }
    return json;
  }
}
