import { randomUUID } from 'node:crypto';
import { decodeCursor, encodeCursor } from '../../core/cursors';
import { badRequest, notFound } from '../../core/errors';
import type { CreditLedgerPort, CreditUsage, Ports } from '../../core/ports';
import { type Principal, type Plan, requireScope, requireWriter } from '../../core/principal';
import type { Checkouts } from './checkouts';
import type { Funding, FundingPreference } from './funding';
import { type Ledger, entryIdFor } from './ledger';
import {
  type BalanceDoc,
  type BillingModels,
  type CheckoutDoc,
  type Currency,
  type EntryDoc,
  type FundingMode,
  type Product,
  type QuoteDoc,
  CURRENCIES,
  FUNDING_MODES,
  PRODUCTS,
} from './model';
import { periodFromKey } from './periods';
import { MAX_TOP_UP_CREDITS } from './pricing';
import type { TestPaymentProvider } from './payment-provider';

export const READ_SCOPE = 'billing:read';
export const WRITE_SCOPE = 'billing:write';
/** Usage page size: 1 to 100, default 25 (as every list). */
export const USAGE_LIMIT = { min: 1, max: 100, default: 25 };
/** Ledger positions one usage page reads at most (a sparse filter then returns a cursor to go on). */
export const USAGE_SCAN = 1000;
/** Writers' clocks may disagree a little with the ledger's order: `from` stops the walk only after this. */
const CLOCK_SLACK_MS = 60_000;
/** Whole credits per usage record: 1 to 1,000,000. */
export const MAX_USAGE_CREDITS = 1_000_000;

export interface BalanceView extends BalanceDoc {
  periodStart: Date;
  periodEnd: Date;
}

export interface UsageFilters {
  product?: string;
  from?: string;
  to?: string;
  source?: string;
  limit?: number;
  cursor?: string;
}

/** The billing owner's AI credits: who may do what, then the ledger, checkouts and funding. */
export class BillingService implements CreditLedgerPort {
  constructor(
    readonly models: BillingModels,
    readonly ledger: Ledger,
    readonly checkouts: Checkouts,
    readonly funding: Funding,
    private readonly ports: Ports,
    private readonly testProvider: TestPaymentProvider,
  ) {}

  async balance(principal: Principal | null): Promise<BalanceView> {
    const p = requireScope(principal, READ_SCOPE);
    return withPeriod(await this.ledger.balance(p.accountId, p.plan));
  }

  async usage(principal: Principal | null, f: UsageFilters): Promise<{ items: EntryDoc[]; nextCursor: string | null }> {
    const p = requireScope(principal, READ_SCOPE);
    const limit = f.limit ?? USAGE_LIMIT.default;
    if (!Number.isInteger(limit) || limit < USAGE_LIMIT.min || limit > USAGE_LIMIT.max) {
      throw badRequest('invalid_limit', `limit must be an integer from ${USAGE_LIMIT.min} to ${USAGE_LIMIT.max}`);
    }
    if (f.product !== undefined && !PRODUCTS.includes(f.product as Product)) {
      throw badRequest('invalid_product', `product must be one of ${PRODUCTS.join(', ')}`);
    }
    const from = f.from === undefined ? null : parseTime(f.from, 'from');
    const to = f.to === undefined ? null : parseTime(f.to, 'to');
    if (from && to && from.getTime() >= to.getTime()) throw badRequest('invalid_time_range', '`from` must be before `to`');
    const binding = JSON.stringify(['usage', f.product ?? null, from, to, f.source ?? null]);
    const after = f.cursor ? decodeCursor<{ seq: number }>(f.cursor, binding) : null;
    const want = (e: EntryDoc) =>
      e.kind === 'usage' &&
      (!f.product || e.product === f.product) &&
      (!f.source || e.source === f.source) &&
      (!from || new Date(e.createdAt).getTime() >= from.getTime()) &&
      (!to || new Date(e.createdAt).getTime() < to.getTime());

    // Walk the ledger downwards by position with point reads (the wire server indexes only exact
    // unique-key matches), a window at a time, at most USAGE_SCAN entries per page.
    const head = await this.ledger.head(p.accountId);
    let next = after ? after.seq - 1 : head.revision;
    const items: EntryDoc[] = [];
    let scanned = 0;
    let reachedFrom = false;
    while (next >= 1 && items.length <= limit && scanned < USAGE_SCAN && !reachedFrom) {
      const window = Array.from({ length: Math.min(limit + 1, next, USAGE_SCAN - scanned) }, (_, i) => next - i);
      const found = await Promise.all(window.map((seq) => this.ledger.at(p.accountId, seq)));
      for (const e of found) {
        scanned++;
        next--;
        if (!e) continue;
        if (from && new Date(e.createdAt).getTime() < from.getTime() - CLOCK_SLACK_MS) reachedFrom = true;
        if (want(e)) items.push(e);
        if (items.length > limit) break;
      }
    }
    // Entries applied this instant and still in the journal belong on the first page.
    if (!after) {
      const seen = new Set(items.map((e) => e._id));
      items.unshift(...head.journal.filter((e) => want(e) && !seen.has(e._id)));
    }
    const page = items.slice(0, limit);
    const last = page[page.length - 1];
    let nextCursor: string | null = null;
    if (items.length > limit && last?.seq) nextCursor = encodeCursor({ seq: last.seq }, binding);
    // A sparse filter may end a page's scan early: the cursor then resumes where it stopped.
    else if (next >= 1 && !reachedFrom) nextCursor = encodeCursor({ seq: next + 1 }, binding);
    return { items: page, nextCursor };
  }

  /** The kernel port: usage reported by an area (Assets AI actions, agents, workflows). */
  async recordUsage(usage: CreditUsage): Promise<{ entryId: string; balanceAfter: number }> {
    const { entry, balance } = await this.record(usage, null);
    return { entryId: entry._id, balanceAfter: entry.balanceAfter ?? balance.available };
  }

  /** `platform credits record-usage`: metered usage as a product would report it. */
  async recordUsageForSlug(slug: string, product: string, credits: number, description?: string): Promise<EntryDoc> {
    const account = await this.ports.get('projects').ensureAccount(slug);
    const { entry } = await this.record(
      { accountId: account.id, product: product as Product, credits, description, source: 'cli', idempotencyKey: randomUUID() },
      account.plan,
    );
    return entry;
  }

  async quote(principal: Principal | null, credits: number, currency: string): Promise<QuoteDoc> {
    const p = writer(principal);
    if (!Number.isInteger(credits) || credits < 1 || credits > MAX_TOP_UP_CREDITS) {
      throw badRequest('invalid_credits', `credits must be a whole number from 1 to ${MAX_TOP_UP_CREDITS}`);
    }
    if (!CURRENCIES.includes(currency as Currency)) {
      throw badRequest('invalid_currency', `currency must be one of ${CURRENCIES.join(', ')}`);
    }
    return this.checkouts.quote(p.accountId, credits, currency as Currency);
  }

  async checkout(principal: Principal | null, input: { quoteId: string; idempotencyKey: string; provider: string }) {
    const p = writer(principal);
    return this.checkouts.checkout(p.accountId, input);
  }

  async fundingPreferences(principal: Principal | null): Promise<FundingPreference[]> {
    const p = requireScope(principal, READ_SCOPE);
    return this.funding.list(p.accountId);
  }

  async setFunding(principal: Principal | null, product: string, mode: string): Promise<FundingPreference[]> {
    const p = writer(principal);
    if (!PRODUCTS.includes(product as Product))
      throw badRequest('invalid_product', `product must be one of ${PRODUCTS.join(', ')}`);
    if (!FUNDING_MODES.includes(mode as FundingMode)) {
      throw badRequest('invalid_mode', `mode must be one of ${FUNDING_MODES.join(', ')}`);
    }
    await this.funding.set(p.accountId, product as Product, mode as FundingMode);
    return this.funding.list(p.accountId);
  }

  /** `platform payments complete`: the stand-in confirms the payment and delivers its webhook. */
  async completePayment(checkoutId: string): Promise<CheckoutDoc> {
    const checkout = await this.checkouts.get(checkoutId);
    if (!checkout) throw notFound('checkout_not_found', 'no such checkout');
    if (checkout.provider !== 'test' || !checkout.providerPaymentId || !checkout.paymentUrl) {
      throw badRequest('not_a_test_checkout', 'only a checkout on the test provider with an open payment can be completed here');
    }
    const result = await this.testProvider.complete(checkout.providerPaymentId, new URL(checkout.paymentUrl).origin);
    const delivery = result.delivery as { status_code: number | null } | undefined;
    if (!delivery || delivery.status_code !== 200) {
      throw badRequest('webhook_not_delivered', 'the stand-in confirmed the payment but its webhook was not accepted', {
        status_code: delivery?.status_code ?? null,
      });
    }
    return (await this.checkouts.get(checkoutId))!;
  }

  private async record(usage: CreditUsage, plan: Plan | null) {
    if (!PRODUCTS.includes(usage.product)) throw badRequest('invalid_product', `product must be one of ${PRODUCTS.join(', ')}`);
    if (!Number.isInteger(usage.credits) || usage.credits < 1 || usage.credits > MAX_USAGE_CREDITS) {
      throw badRequest('invalid_credits', `credits must be a whole number from 1 to ${MAX_USAGE_CREDITS}`);
    }
    const mode = await this.funding.modeOf(usage.accountId, usage.product);
    const { entry, balance } = await this.ledger.apply(
      usage.accountId,
      plan,
      {
        id: entryIdFor(usage.accountId, 'usage', usage.idempotencyKey),
        kind: 'usage',
        credits: usage.credits,
        // A byok product runs on the customer's own provider key: metered, never drawn.
        delta: mode === 'byok' ? 0 : -usage.credits,
        product: usage.product,
        funding: mode,
        source: usage.source,
        description: usage.description ?? null,
      },
      mode === 'managed',
    );
    return { entry, balance };
  }
}

function writer(principal: Principal | null): Principal {
  requireWriter(principal);
  return requireScope(principal, WRITE_SCOPE);
}

function withPeriod(b: BalanceDoc): BalanceView {
  const period = periodFromKey(b.period);
  return { ...b, periodStart: period.start, periodEnd: period.end };
}

function parseTime(s: string, name: string): Date {
  const d = new Date(s);
  if (!/^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:\d{2}))?$/.test(s) || Number.isNaN(d.getTime())) {
    throw badRequest('invalid_time_range', `\`${name}\` must be an ISO 8601 date or timestamp`);
  }
  return d;
}
