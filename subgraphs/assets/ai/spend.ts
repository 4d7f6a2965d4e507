import { paymentRequired } from '../../../core/errors';
import { isDuplicateKey } from '../../../core/mongo';
import type { AiModels, AiSpendDoc } from './model';

/** Reservation tokens one month document keeps. */
const RESERVATIONS_KEPT = 1000;

/**
 * The monthly AI spend cap (spec 7.3/8: "AI monthly spend cap in micros", 402 when reached). A
 * request reserves its price with one conditional `$inc` on the month's document: the filter
 * `spentMicros ≤ cap − price` makes concurrent requests unable to overrun the cap, and the token
 * pushed in the same update makes the reservation idempotent (a token already there is not
 * reserved twice). A failed job gives the price back with one update filtered on its token.
 */
export class AiSpend {
  constructor(private readonly m: AiModels) {}

  static id = (accountId: string, period: string) => `${accountId}:${period}`;

  async spent(accountId: string, period: string): Promise<number> {
    const d = await this.m.Spend.findById(AiSpend.id(accountId, period)).lean<AiSpendDoc>().exec();
    return d?.spentMicros ?? 0;
  }

  async reserve(accountId: string, period: string, token: string, priceMicros: number, capMicros: number): Promise<void> {
    const _id = AiSpend.id(accountId, period);
    try {
      await this.m.Spend.create({ _id, accountId, period, spentMicros: 0, reservations: [] });
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
    }
    const res = await this.m.Spend.updateOne(
      { _id, reservations: { $ne: token }, spentMicros: { $lte: capMicros - priceMicros } },
      { $inc: { spentMicros: priceMicros }, $push: { reservations: { $each: [token], $slice: -RESERVATIONS_KEPT } } },
    );
    if (res.modifiedCount === 1) return;
    const now = await this.m.Spend.findById(_id).lean<AiSpendDoc>().exec();
    if (now?.reservations.includes(token)) return;
    throw paymentRequired('assets.ai_spend_cap_reached', 'the monthly AI spend cap is reached', {
      monthly_spend_cap_micros: capMicros,
      spent_micros: now?.spentMicros ?? 0,
      price_micros: priceMicros,
      period,
    });
  }

  async release(accountId: string, period: string, token: string, priceMicros: number): Promise<void> {
    await this.m.Spend.updateOne(
      { _id: AiSpend.id(accountId, period), reservations: token },
      { $inc: { spentMicros: -priceMicros }, $pull: { reservations: token } },
    );
  }
}
