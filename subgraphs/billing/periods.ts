import type { Plan } from '../../core/principal';

/**
 * Monthly allocation by plan, in whole credits (docs/contracts.md: `pro` ≥ 1,000, `free` ≥ 100). The
 * allocation of a period is granted once, when the period is first touched; unused allocation
 * expires at the end of the UTC calendar month, top-ups carry over.
 */
export const MONTHLY_ALLOCATION: Record<Plan, number> = { free: 100, pro: 1000 };

export interface Period {
  /** `YYYY-MM` of the UTC calendar month. */
  key: string;
  start: Date;
  /** Exclusive: the first instant of the next month. */
  end: Date;
}

/** The UTC calendar month holding `at`. */
export function periodOf(at: Date): Period {
  const y = at.getUTCFullYear();
  const m = at.getUTCMonth();
  const start = new Date(Date.UTC(y, m, 1));
  const end = new Date(Date.UTC(y, m + 1, 1));
  return { key: start.toISOString().slice(0, 7), start, end };
}

export function periodFromKey(key: string): Period {
  return periodOf(new Date(`${key}-01T00:00:00.000Z`));
}
