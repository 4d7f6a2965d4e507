import type { FundingPreference } from './funding';
import type { CheckoutDoc, EntryDoc, QuoteDoc } from './model';
import type { BalanceView } from './service';
import type {
  AiCreditBalanceType,
  AiCreditCheckoutType,
  AiCreditEntryType,
  AiCreditFundingType,
  AiCreditQuoteType,
} from './types';

export const toBalance = (b: BalanceView): AiCreditBalanceType => ({
  accountId: b._id,
  plan: b.plan,
  available: b.available,
  allocation: b.allocation,
  usedThisPeriod: b.usedThisPeriod,
  byokUsedThisPeriod: b.byokUsedThisPeriod,
  topUps: b.topUpsThisPeriod,
  carriedOver: b.carriedOver,
  adjustments: b.adjustmentsThisPeriod,
  periodStart: b.periodStart,
  periodEnd: b.periodEnd,
  updatedAt: b.updatedAt,
});

export const toEntry = (e: EntryDoc): AiCreditEntryType => ({
  id: e._id,
  kind: e.kind,
  product: e.product,
  credits: e.credits,
  balanceDelta: e.delta,
  funding: e.funding,
  source: e.source,
  description: e.description,
  balanceAfter: e.balanceAfter,
  period: e.period,
  createdAt: new Date(e.createdAt),
});

export const toQuote = (q: QuoteDoc): AiCreditQuoteType => ({
  id: q._id,
  credits: q.credits,
  currency: q.currency,
  unitPriceMinor: q.unitPriceMinor,
  priceMinor: q.amountMinor,
  expiresAt: q.expiresAt,
  createdAt: q.createdAt,
});

export const toCheckout = (c: CheckoutDoc): AiCreditCheckoutType => ({
  id: c._id,
  quoteId: c.quoteId,
  idempotencyKey: c.idempotencyKey,
  provider: c.provider,
  status: c.status,
  credits: c.credits,
  currency: c.currency,
  priceMinor: c.amountMinor,
  paymentUrl: c.paymentUrl,
  entryId: c.entryId,
  createdAt: c.createdAt,
  updatedAt: c.updatedAt,
  paidAt: c.paidAt,
});

export const toFunding = (prefs: FundingPreference[]): AiCreditFundingType => ({ preferences: prefs });

/** The CLI and webhook answers: the same fields the REST routes show, snake_case. */
export const checkoutJson = (c: CheckoutDoc) => {
  const v = toCheckout(c);
  return {
    id: v.id,
    quote_id: v.quoteId,
    idempotency_key: v.idempotencyKey,
    provider: v.provider,
    status: v.status,
    credits: v.credits,
    currency: v.currency,
    price_minor: v.priceMinor,
    payment_url: v.paymentUrl,
    entry_id: v.entryId,
    created_at: v.createdAt,
    updated_at: v.updatedAt,
    paid_at: v.paidAt,
  };
};

export const entryJson = (e: EntryDoc) => {
  const v = toEntry(e);
  return {
    id: v.id,
    kind: v.kind,
    product: v.product,
    credits: v.credits,
    balance_delta: v.balanceDelta,
    funding: v.funding,
    source: v.source,
    description: v.description,
    balance_after: v.balanceAfter,
    period: v.period,
    created_at: v.createdAt,
  };
};
