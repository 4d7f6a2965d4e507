import { PlatformError } from '../../../core/errors';
import type { Principal } from '../../../core/principal';
import type { AssetsService } from '../storage';
import { type UsageCounters, type UsageCounts, USAGE_FIELDS, dayOf, zeroCounts } from '../usage';

/** Default window: the 30 days up to today (UTC); longest window one year and a day. */
export const ANALYTICS_DEFAULT_DAYS = 30;
export const ANALYTICS_MAX_DAYS = 366;
const DAY_MS = 86_400_000;

export interface Analytics {
  from: string;
  to: string;
  totals: UsageCounts;
  days: { day: string; counts: UsageCounts }[];
}

const invalidRange = (message: string) => new PlatformError('assets.invalid_range', 422, message);

/** `GET /analytics`: delivery, transform and AI usage per UTC day of a window, and its totals. */
export async function analytics(
  assets: AssetsService,
  usage: UsageCounters,
  p: Principal | null,
  args: { from?: string | null; to?: string | null },
): Promise<Analytics> {
  const { accountId } = assets.reader(p);
  // The schema checks the shape; a day that does not exist (2026-02-30, 0000-00-00) or a backwards window is 422.
  const to = args.to ?? dayOf(new Date());
  const end = new Date(`${to}T00:00:00Z`).getTime();
  if (Number.isNaN(end) || dayOf(new Date(end)) !== to) throw invalidRange('to is not a calendar day');
  const from = args.from ?? dayOf(new Date(end - (ANALYTICS_DEFAULT_DAYS - 1) * DAY_MS));
  const start = new Date(`${from}T00:00:00Z`).getTime();
  if (Number.isNaN(start) || dayOf(new Date(start)) !== from) throw invalidRange('from is not a calendar day');
  if (start > end) throw invalidRange('from is after to');
  if ((end - start) / DAY_MS + 1 > ANALYTICS_MAX_DAYS) throw invalidRange(`a window holds at most ${ANALYTICS_MAX_DAYS} days`);
  const days = await usage.days(accountId, from, to);
  const totals = zeroCounts();
  for (const d of days) for (const f of USAGE_FIELDS) totals[f] += d.counts[f];
  return { from, to, totals, days };
}
