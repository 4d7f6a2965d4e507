import mongoose, { type Connection, type Model } from 'mongoose';
import { model } from '../../core/mongo';
import type { Plan } from '../../core/principal';

export const PRODUCTS = ['assets', 'agents', 'workflows'] as const;
export type Product = (typeof PRODUCTS)[number];
export const FUNDING_MODES = ['managed', 'byok'] as const;
export type FundingMode = (typeof FUNDING_MODES)[number];
export const ENTRY_KINDS = ['allocation', 'top_up', 'usage', 'adjustment'] as const;
export type EntryKind = (typeof ENTRY_KINDS)[number];

/**
 * One immutable ledger entry. `delta` is its signed effect on the balance (a `byok` usage is
 * metered but draws nothing: delta 0), so the balance always equals the sum of the deltas.
 */
export interface EntryDoc {
  /** Entry id: the idempotency identity (same id → the same entry, applied once). */
  _id: string;
  accountId: string;
  kind: EntryKind;
  /** Credits as reported (usage, top-up, allocation: positive; adjustment: signed). */
  credits: number;
  delta: number;
  product: Product | null;
  /** `managed` or `byok` for usage; null otherwise. */
  funding: FundingMode | null;
  source: string;
  description: string | null;
  /** `YYYY-MM` of the period it counts in. */
  period: string;
  /** Balance right after this entry; null only for an entry recovered after its writer died. */
  balanceAfter: number | null;
  /**
   * Position in the account's ledger: the balance revision its update produced (set when the entry
   * leaves the journal). Listing walks it downwards by point reads on the unique `{accountId, seq}`.
   */
  seq: number | null;
  createdAt: Date;
}

/**
 * The account's balance: one document changed only by single conditional updates, each of which
 * carries the entry it applies in `journal` (the entry is copied to `billing_entries` and pulled
 * right after). `recent` remembers the last applied ids, closing the gap while an entry moves from
 * the journal to the collection.
 */
export interface BalanceDoc {
  _id: string;
  plan: Plan;
  period: string;
  /** This period's allocation (grows when a plan upgrade is first seen within it). */
  allocation: number;
  /** Credits carried into this period (top-ups and adjustments of earlier periods). */
  carriedOver: number;
  usedThisPeriod: number;
  byokUsedThisPeriod: number;
  topUpsThisPeriod: number;
  adjustmentsThisPeriod: number;
  available: number;
  revision: number;
  journal: EntryDoc[];
  recent: string[];
  createdAt: Date;
  updatedAt: Date;
}

export const CURRENCIES = ['NGN', 'USD'] as const;
export type Currency = (typeof CURRENCIES)[number];

export interface QuoteDoc {
  _id: string;
  accountId: string;
  credits: number;
  currency: Currency;
  unitPriceMinor: number;
  amountMinor: number;
  expiresAt: Date;
  createdAt: Date;
}

export type CheckoutStatus = 'pending' | 'paid';

export interface CheckoutDoc {
  _id: string;
  accountId: string;
  quoteId: string;
  idempotencyKey: string;
  provider: string;
  status: CheckoutStatus;
  credits: number;
  currency: Currency;
  amountMinor: number;
  providerPaymentId: string | null;
  paymentUrl: string | null;
  /** The ledger entry the confirmed payment wrote (`top_up:<checkout id>`). */
  entryId: string | null;
  paidAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface FundingDoc {
  _id: string;
  accountId: string;
  product: Product;
  mode: FundingMode;
  updatedAt: Date;
}

const opts = { versionKey: false as const };

const entryFields = {
  _id: { type: String, required: true },
  accountId: { type: String, required: true },
  kind: { type: String, required: true, enum: ENTRY_KINDS },
  credits: { type: Number, required: true },
  delta: { type: Number, required: true },
  product: { type: String, default: null },
  funding: { type: String, default: null },
  source: { type: String, required: true },
  description: { type: String, default: null },
  period: { type: String, required: true },
  balanceAfter: { type: Number, default: null },
  seq: { type: Number, default: null },
  createdAt: { type: Date, required: true },
};

export interface BillingModels {
  Balance: Model<BalanceDoc>;
  Entry: Model<EntryDoc>;
  Quote: Model<QuoteDoc>;
  Checkout: Model<CheckoutDoc>;
  Funding: Model<FundingDoc>;
}

export function billingModels(conn: Connection): BillingModels {
  const entry = new mongoose.Schema<EntryDoc>(entryFields, { ...opts, collection: 'billing_entries' });
  // The listing's point reads: an exact match on a unique key is what the wire server indexes.
  entry.index({ accountId: 1, seq: 1 }, { unique: true });

  const balance = new mongoose.Schema<BalanceDoc>(
    {
      _id: { type: String, required: true },
      plan: { type: String, required: true },
      period: { type: String, required: true },
      allocation: { type: Number, required: true },
      carriedOver: { type: Number, required: true },
      usedThisPeriod: { type: Number, required: true },
      byokUsedThisPeriod: { type: Number, required: true },
      topUpsThisPeriod: { type: Number, required: true },
      adjustmentsThisPeriod: { type: Number, required: true },
      available: { type: Number, required: true },
      revision: { type: Number, required: true },
      // Plain objects: entries keep their `_id` (the entry id) inside the journal.
      journal: { type: [mongoose.Schema.Types.Mixed], default: [] } as never,
      recent: { type: [String], default: [] },
      createdAt: { type: Date, required: true },
      updatedAt: { type: Date, required: true },
    },
    { ...opts, collection: 'billing_balances' },
  );

  const quote = new mongoose.Schema<QuoteDoc>(
    {
      _id: String,
      accountId: { type: String, required: true },
      credits: { type: Number, required: true },
      currency: { type: String, required: true },
      unitPriceMinor: { type: Number, required: true },
      amountMinor: { type: Number, required: true },
      expiresAt: { type: Date, required: true },
      createdAt: { type: Date, required: true },
    },
    { ...opts, collection: 'billing_quotes' },
  );

  const checkout = new mongoose.Schema<CheckoutDoc>(
    {
      _id: String,
      accountId: { type: String, required: true },
      quoteId: { type: String, required: true },
      idempotencyKey: { type: String, required: true },
      provider: { type: String, required: true },
      status: { type: String, required: true },
      credits: { type: Number, required: true },
      currency: { type: String, required: true },
      amountMinor: { type: Number, required: true },
      providerPaymentId: { type: String, default: null },
      paymentUrl: { type: String, default: null },
      entryId: { type: String, default: null },
      paidAt: { type: Date, default: null },
      createdAt: { type: Date, required: true },
      updatedAt: { type: Date, required: true },
    },
    { ...opts, collection: 'billing_checkouts' },
  );
  // Exactly once: one checkout per (account, idempotency key), and a quote pays at most once.
  checkout.index({ accountId: 1, idempotencyKey: 1 }, { unique: true });
  checkout.index({ quoteId: 1 }, { unique: true });
  checkout.index({ _id: 1, status: 1 }, { unique: true });

  const funding = new mongoose.Schema<FundingDoc>(
    {
      _id: String,
      accountId: { type: String, required: true },
      product: { type: String, required: true },
      mode: { type: String, required: true },
      updatedAt: { type: Date, required: true },
    },
    { ...opts, collection: 'billing_funding' },
  );
  funding.index({ accountId: 1, product: 1 }, { unique: true });

  return {
    Balance: model(conn, 'billing', 'Balance', balance),
    Entry: model(conn, 'billing', 'Entry', entry),
    Quote: model(conn, 'billing', 'Quote', quote),
    Checkout: model(conn, 'billing', 'Checkout', checkout),
    Funding: model(conn, 'billing', 'Funding', funding),
  } as BillingModels;
}
