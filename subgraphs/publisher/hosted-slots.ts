import { paymentRequired } from '../../core/errors';
import { isDuplicateKey } from '../../core/mongo';
import type { Plan, Principal } from '../../core/principal';
import type { PublisherModels } from './model';

/** Hosted sites an account may run, by plan (the `free` plan allows one); staging copies count. */
export const HOSTED_SITE_LIMIT: Record<Plan, number> = { free: 1, pro: 100 };

/**
 * The plan's hosted-site slots of an account: one quota document per account listing the sites
 * that hold a slot, taken and given back by one conditional update each, so a resumed create or a
 * release given twice never counts twice.
 */
export class HostedSlots {
  constructor(private readonly models: PublisherModels) {}

  /**
   * Takes a hosted-site slot of the plan for `siteId` (402 when none is left). Idempotent per site:
   * the quota lists the sites holding a slot, so a resumed create does not take a second one and a
   * release given twice does not free two.
   */
  async reserve(p: Principal, siteId: string): Promise<void> {
    const limit = HOSTED_SITE_LIMIT[p.plan];
    try {
      const updated = await this.models.SiteQuota.findOneAndUpdate(
        { _id: p.accountId, hostedSites: { $lt: limit }, holders: { $ne: siteId } },
        { $inc: { hostedSites: 1 }, $push: { holders: siteId } },
        { upsert: true, new: true },
      );
      if (updated) return;
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
    }
    const quota = await this.models.SiteQuota.findById(p.accountId).lean();
    if (quota?.holders?.includes(siteId)) return;
    throw paymentRequired('plan_limit_reached', `the ${p.plan} plan allows ${limit} hosted site${limit === 1 ? '' : 's'}`, {
      plan: p.plan,
      limit,
    });
  }

  /** Gives back the slot `siteId` holds (a failed create, a deleted site, a provisioning failed for good); idempotent. */
  async release(accountId: string, siteId: string): Promise<void> {
    await this.models.SiteQuota.updateOne(
      { _id: accountId, holders: siteId },
      { $inc: { hostedSites: -1 }, $pull: { holders: siteId } },
    );
  }
}
