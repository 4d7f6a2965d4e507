import { randomUUID } from 'node:crypto';
import { PlatformError, badRequest, conflict, notFound } from '../../core/errors';
import { isDuplicateKey } from '../../core/mongo';
import type { Plan } from '../../core/principal';
import { type Ledger, entryIdFor } from './ledger';
import type { BillingModels, CheckoutDoc, Currency, QuoteDoc } from './model';
import type { PaymentEvent, PaymentProvider } from './payment-provider';
import { QUOTE_TTL_MS, priceOf } from './pricing';

/** Idempotency keys: 1–255 visible ASCII characters. */
export const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * Quotes and exactly-once checkout. A checkout is one document per (account, idempotency key) and
 * per quote (two unique indexes decide every race); the payment is credited by the provider's
 * signed webhook through the ledger with the entry id `top_up` of the checkout, so however often it
 * is delivered, the credits land once.
 */
export class Checkouts {
  constructor(
    private readonly models: BillingModels,
    private readonly ledger: Ledger,
    private readonly providers: Map<string, PaymentProvider>,
    private readonly webhookUrl: (provider: string) => string,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async quote(accountId: string, credits: number, currency: Currency): Promise<QuoteDoc> {
    const now = this.now();
    const doc: QuoteDoc = {
      _id: randomUUID(),
      accountId,
      credits,
      currency,
      ...priceOf(credits, currency),
      expiresAt: new Date(now.getTime() + QUOTE_TTL_MS),
      createdAt: now,
    };
    await this.models.Quote.create(doc);
    return doc;
  }

  async checkout(accountId: string, input: { quoteId: string; idempotencyKey: string; provider: string }): Promise<CheckoutDoc> {
    if (!IDEMPOTENCY_KEY.test(input.idempotencyKey)) {
      throw badRequest('invalid_idempotency_key', 'idempotency_key must be 1–255 visible ASCII characters');
    }
    const provider = this.providers.get(input.provider);
    if (!provider) {
      throw badRequest('unknown_provider', `unknown payment provider "${input.provider}"`, {
        supported: [...this.providers.keys()],
      });
    }
    const existing = await this.models.Checkout.findOne({ accountId, idempotencyKey: input.idempotencyKey }).lean<CheckoutDoc>();
    if (existing) return this.replay(existing, input, provider);

    const quote = await this.models.Quote.findById(input.quoteId).lean<QuoteDoc>();
    if (!quote || quote.accountId !== accountId) throw notFound('quote_not_found', 'no such quote');
    const now = this.now();
    if (quote.expiresAt.getTime() <= now.getTime()) {
      throw new PlatformError('quote_expired', 410, 'the quote has expired; ask for a new one', { expired_at: quote.expiresAt });
    }
    const doc: CheckoutDoc = {
      _id: randomUUID(),
      accountId,
      quoteId: quote._id,
      idempotencyKey: input.idempotencyKey,
      provider: provider.name,
      status: 'pending',
      credits: quote.credits,
      currency: quote.currency,
      amountMinor: quote.amountMinor,
      providerPaymentId: null,
      paymentUrl: null,
      entryId: null,
      paidAt: null,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await this.models.Checkout.create(doc);
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
      const raced = await this.models.Checkout.findOne({ accountId, idempotencyKey: input.idempotencyKey }).lean<CheckoutDoc>();
      if (raced) return this.replay(raced, input, provider);
      throw conflict('quote_already_used', 'this quote already has a checkout under another idempotency key', {
        quote_id: quote._id,
      });
    }
    return this.openPayment(doc, provider);
  }

  async get(checkoutId: string): Promise<CheckoutDoc | null> {
    return this.models.Checkout.findById(checkoutId).lean<CheckoutDoc>();
  }

  /**
   * A provider's webhook: verified over the raw body first (a bad signature changes nothing), then
   * the ledger is credited once (entry id from the checkout) and the checkout marked paid.
   */
  async confirm(providerName: string, rawBody: string, headers: Record<string, string | string[] | undefined>) {
    const provider = this.providers.get(providerName);
    if (!provider) throw notFound('unknown_provider', `unknown payment provider "${providerName}"`);
    const event = provider.verifyWebhook(rawBody, headers);
    if (event.type !== 'payment.succeeded') return { handled: false, checkout: null };
    const checkout = await this.models.Checkout.findById(event.reference).lean<CheckoutDoc>();
    if (!checkout || checkout.provider !== provider.name) throw notFound('checkout_not_found', 'no checkout for this payment');
    assertMatches(checkout, event);
    return { handled: true, checkout: await this.credit(checkout, event) };
  }

  private async credit(checkout: CheckoutDoc, event: PaymentEvent): Promise<CheckoutDoc> {
    const entryId = entryIdFor(checkout.accountId, 'top_up', checkout._id);
    await this.ledger.apply(
      checkout.accountId,
      null as Plan | null,
      {
        id: entryId,
        kind: 'top_up',
        credits: checkout.credits,
        delta: checkout.credits,
        source: `payments.${checkout.provider}`,
        description: `top-up of ${checkout.credits} credits (checkout ${checkout._id}, payment ${event.paymentId})`,
      },
      false,
    );
    const now = this.now();
    await this.models.Checkout.updateOne(
      { _id: checkout._id, status: 'pending' },
      { $set: { status: 'paid', entryId, paidAt: now, updatedAt: now } },
    );
    return (await this.get(checkout._id))!;
  }

  private async replay(existing: CheckoutDoc, input: { quoteId: string }, provider: PaymentProvider): Promise<CheckoutDoc> {
    if (existing.quoteId !== input.quoteId) {
      throw conflict('idempotency_conflict', 'this idempotency key was used with another quote', {
        checkout_id: existing._id,
        quote_id: existing.quoteId,
      });
    }
    // A first attempt that died before the provider answered: ask again (the provider is idempotent by reference).
    return existing.paymentUrl ? existing : this.openPayment(existing, provider);
  }

  private async openPayment(doc: CheckoutDoc, provider: PaymentProvider): Promise<CheckoutDoc> {
    const payment = await provider.createPayment({
      reference: doc._id,
      amountMinor: doc.amountMinor,
      currency: doc.currency,
      description: `${doc.credits} AI credits`,
      webhookUrl: this.webhookUrl(provider.name),
    });
    const now = this.now();
    await this.models.Checkout.updateOne(
      { _id: doc._id, paymentUrl: null },
      { $set: { providerPaymentId: payment.paymentId, paymentUrl: payment.paymentUrl, updatedAt: now } },
    );
    return (await this.get(doc._id))!;
  }
}

function assertMatches(checkout: CheckoutDoc, event: PaymentEvent): void {
  const mismatch =
    (checkout.providerPaymentId && checkout.providerPaymentId !== event.paymentId) ||
    checkout.amountMinor !== event.amountMinor ||
    checkout.currency !== event.currency;
  if (mismatch) throw badRequest('payment_mismatch', 'the payment does not match its checkout (id, amount or currency)');
}
