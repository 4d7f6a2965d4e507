import type { Currency } from './model';

/**
 * Top-up price table, per credit in the currency's minor unit: USD 1 cent (100 credits = $1.00),
 * NGN 15 naira = 1,500 kobo. A quote holds its price for QUOTE_TTL_MS.
 */
export const UNIT_PRICE_MINOR: Record<Currency, number> = { USD: 1, NGN: 1500 };
/** A quote expires 15 minutes after it is made. */
export const QUOTE_TTL_MS = 15 * 60 * 1000;
/** Whole credits per top-up: 1 to 1,000,000. */
export const MAX_TOP_UP_CREDITS = 1_000_000;

export function priceOf(credits: number, currency: Currency): { unitPriceMinor: number; amountMinor: number } {
  const unitPriceMinor = UNIT_PRICE_MINOR[currency];
  return { unitPriceMinor, amountMinor: unitPriceMinor * credits };
}
