/**
 * What AI work costs (decision 0026). Prices are in micros (millionths of a US dollar), the unit of
 * the spec's `monthly_spend_cap_micros`; the AI-credits ledger counts credits, 1 credit = 10,000
 * micros (one US cent). Every price is a whole number of credits so a draw is never rounded.
 */
export const AI_ACTIONS = [
  'analyze',
  'moderation',
  'smart-crop',
  'background-remove',
  'text-extraction',
  'transcript',
  'generation',
] as const;
export type AiAction = (typeof AI_ACTIONS)[number];

/** The four image actions of `POST /{id}/ai/{action}`. */
export const IMAGE_ACTIONS = ['analyze', 'moderation', 'smart-crop', 'background-remove'] as const;
export type ImageAction = (typeof IMAGE_ACTIONS)[number];

export const MICROS_PER_CREDIT = 10_000;

/** Price of one action (per image for generations). */
export const PRICE_MICROS: Record<AiAction, number> = {
  analyze: 20_000,
  moderation: 10_000,
  'smart-crop': 10_000,
  'background-remove': 50_000,
  'text-extraction': 20_000,
  transcript: 60_000,
  generation: 40_000,
};

export const creditsOf = (micros: number): number => micros / MICROS_PER_CREDIT;

/** A new account's cap: US$ 5 a month (the free plan's 100 credits are US$ 1). */
export const DEFAULT_MONTHLY_CAP_MICROS = 5_000_000;
/** Largest cap one may set: US$ 1,000,000 a month. */
export const MAX_MONTHLY_CAP_MICROS = 1_000_000_000_000;

/** The UTC calendar month a spend counts in, `YYYY-MM`. */
export const periodOf = (d: Date): string => d.toISOString().slice(0, 7);
