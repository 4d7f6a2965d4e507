import { conflict, paymentRequired } from '../../core/errors';
import { isDuplicateKey } from '../../core/mongo';
import type { Plan, Principal } from '../../core/principal';
import type { PublisherModels } from './model';
import { defaultRuntime, findRuntime } from './runtime-catalog';

/** Hosted sites an account may run, by plan (the `free` plan allows one); staging copies count. */
export const HOSTED_SITE_LIMIT: Record<Plan, number> = { free: 1, pro: 100 };

/**
 * Whether a plan's sites sleep when idle (dataplane/sleep.ts; docs/decisions/0340-sleep-and-wake.md):
 * every plan's do today, as the contract says (docs/contracts.md, "Sleep and wake"); a plan that
 * keeps its sites always on says false here. A site keeps the rule of the plan it was made under.
 */
export const SLEEPS_WHEN_IDLE: Record<Plan, boolean> = { free: true, pro: true };

/**
 * The plan's hosted-site slots of an account: one quota document per account listing the sites
 * that hold a slot, taken and given back by one conditional update each, so a resumed create or a
 * release given twice never counts twice.
 */
export class HostedSlots {
  /**
   * `nodeMemoryMb`: the memory this platform's node gives hosted sites (docs/decisions/0158-site-resources.md);
   * every hosted site holding a slot reserves its runtime's memory floor from it. Null: unbounded.
   */
  constructor(
    private readonly models: PublisherModels,
    private readonly nodeMemoryMb: number | null = null,
    /** `PUBLISHER_IDLE_SLEEP_MS`: while sites sleep (above 0), only those that never sleep hold memory for good. */
    private readonly idleSleepMs = 0,
  ) {}

  /**
   * Takes a hosted-site slot of the plan for `siteId` (402 when none is left). Idempotent per site:
   * the quota lists the sites holding a slot, so a resumed create does not take a second one and a
   * release given twice does not free two.
   */
  async reserve(p: Principal, siteId: string, runtimeVersion?: string): Promise<void> {
    if (runtimeVersion !== undefined) await this.checkNodeMemory(siteId, runtimeVersion);
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

  /**
   * 409 `node_capacity_exhausted` when the node cannot give the site its runtime's memory floor beside
   * the floors of the hosted sites that hold a slot (running, stopped or provisioning: any of them may
   * start). While sites sleep, only awake sites hold memory and the node puts the least recently
   * used to sleep to wake another (dataplane/sleep.ts), so only the sites that never sleep count.
   * A check, not a reservation: two creates racing for the last room may both pass (the
   * floor is a floor; the process still starts, with its V8 ceiling).
   */
  private async checkNodeMemory(siteId: string, runtimeVersion: string): Promise<void> {
    if (this.nodeMemoryMb === null) return;
    const floor = (v: string) => (findRuntime(v) ?? defaultRuntime()).memoryFloorMb;
    const quotas = await this.models.SiteQuota.find({}, { holders: 1 }).lean();
    const holders = quotas.flatMap((q) => q.holders ?? []).filter((id) => id !== siteId);
    const sites = holders.length
      ? await this.models.Site.find(
          { _id: { $in: holders }, deploymentMode: 'hosted', status: { $ne: 'deleted' } },
          { runtimeVersion: 1, sleepsWhenIdle: 1 },
        ).lean()
      : [];
    const sleeping = this.idleSleepMs > 0;
    const used = sites.reduce((sum, s) => sum + (sleeping && s.sleepsWhenIdle !== false ? 0 : floor(s.runtimeVersion)), 0);
    const wanted = floor(runtimeVersion);
    if (used + wanted > this.nodeMemoryMb) {
      throw conflict(
        'node_capacity_exhausted',
        `this node has no memory left for another site: ${used} of ${this.nodeMemoryMb} MiB are reserved by running sites and this runtime needs ${wanted} MiB`,
        { node_memory_mb: this.nodeMemoryMb, reserved_mb: used, required_mb: wanted },
      );
    }
  }
}
