import { conflict, isPlatformError, notFound } from '../../../core/errors';
import { newId } from '../../../core/ids';
import type { Logger } from '../../../core/logger';
import { isDuplicateKey } from '../../../core/mongo';
import type { Principal } from '../../../core/principal';
import { Clock } from './clock';
import type { LifecycleAction, LifecycleRuleDoc } from './model';
import type { Model } from 'mongoose';
import { type AssetDoc, type AssetVersion, SCOPES } from '../records';
import type { AssetsService } from '../storage';

/** Rules an account may hold (spec 8 leaves it open: docs/spec-decisions.md). */
export const MAX_RULES_PER_ACCOUNT = 100;
/** Assets one rule looks at per pass; the next pass continues where this one stopped. */
export const RULE_BATCH = 200;
/** How long a worker owns a claimed rule. */
const RULE_LEASE_MS = 60_000;
const DAY_MS = 24 * 3600 * 1000;
/** Statuses a rule acts on: `processing` is the upload's own business, `deleting` is already going. */
const SETTLED = ['ready', 'quarantined', 'failed'];

export interface RuleInput {
  name: string;
  prefix?: string | null;
  action: LifecycleAction;
  ageDays: number;
  enabled?: boolean;
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const ruleNotFound = () => notFound('assets.lifecycle_rule_not_found', 'lifecycle rule not found');

/**
 * When a version stopped being current: the creation of the next version. The current version
 * never expires (`expire_versions` keeps it), nor does one a branch points at.
 */
export function expiredVersions(asset: Pick<AssetDoc, 'versions' | 'currentVersion' | 'branches'>, cutoff: Date): AssetVersion[] {
  const sorted = [...asset.versions].sort((a, b) => a.number - b.number);
  const pinned = new Set((asset.branches ?? []).map((b) => b.version));
  return sorted.filter((v, i) => {
    if (v.number === asset.currentVersion || pinned.has(v.number)) return false;
    const next = sorted[i + 1];
    return next !== undefined && new Date(next.createdAt) <= cutoff;
  });
}

/**
 * Lifecycle rules (spec 2.3, 4.3): `delete` removes assets whose current version is older than
 * `age_days`; `expire_versions` removes versions that stopped being current more than `age_days`
 * ago. A worker pass (`runDue`) claims each enabled rule with one conditional update, looks at up
 * to RULE_BATCH of the account's assets (index `accountId, createdAt`) and goes on next pass.
 * Deletion goes through the service's own revision-checked delete (the same job, events and
 * webhooks as `DELETE /{id}`); a version expiry is one revision-guarded update of the asset that
 * carries the webhooks' record change in the same write.
 */
export class LifecycleRules {
  constructor(
    readonly Rule: Model<LifecycleRuleDoc>,
    private readonly assets: AssetsService,
    readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  async create(p: Principal | null, input: RuleInput): Promise<LifecycleRuleDoc> {
    const { accountId } = this.assets.writer(p);
    const count = await this.Rule.countDocuments({ accountId });
    if (count >= MAX_RULES_PER_ACCOUNT)
      throw conflict('assets.lifecycle_rule_limit', `an account holds at most ${MAX_RULES_PER_ACCOUNT} lifecycle rules`);
    const doc: LifecycleRuleDoc = {
      _id: newId(),
      accountId,
      name: input.name,
      prefix: input.prefix ? input.prefix : null,
      action: input.action,
      ageDays: input.ageDays,
      enabled: input.enabled ?? true,
      resume: null,
      leaseUntil: null,
      lastRunAt: null,
      deletedAssets: 0,
      expiredVersions: 0,
      createdAt: new Date(),
    };
    try {
      await this.Rule.create(doc);
    } catch (e) {
      if (isDuplicateKey(e)) throw conflict('assets.lifecycle_rule_exists', `a lifecycle rule named ${input.name} exists`);
      throw e;
    }
    return doc;
  }

  async list(p: Principal | null): Promise<LifecycleRuleDoc[]> {
    const { accountId } = this.assets.reader(p);
    return this.Rule.find({ accountId }).sort({ createdAt: 1, _id: 1 }).lean<LifecycleRuleDoc[]>().exec();
  }

  async remove(p: Principal | null, id: string): Promise<LifecycleRuleDoc> {
    const { accountId } = this.assets.writer(p);
    const gone = await this.Rule.findOneAndDelete({ _id: id, accountId }).lean<LifecycleRuleDoc>().exec();
    if (!gone) throw ruleNotFound();
    return gone;
  }

  // ---- the worker ---------------------------------------------------------------------------

  /** One worker pass over every enabled rule; returns how many rules it ran. */
  async runDue(): Promise<number> {
    const wall = new Date();
    const candidates = await this.Rule.find(
      { enabled: true, $or: [{ leaseUntil: null }, { leaseUntil: { $lt: wall } }] },
      { _id: 1, leaseUntil: 1 },
    )
      .sort({ lastRunAt: 1 })
      .limit(100)
      .lean<LifecycleRuleDoc[]>()
      .exec();
    let ran = 0;
    for (const c of candidates) {
      const rule = await this.Rule.findOneAndUpdate(
        { _id: c._id, enabled: true, leaseUntil: c.leaseUntil },
        { $set: { leaseUntil: new Date(Date.now() + RULE_LEASE_MS) } },
        { new: true },
      )
        .lean<LifecycleRuleDoc>()
        .exec();
      if (!rule) continue;
      ran++;
      let resume = rule.resume;
      const done = { deleted: 0, expired: 0 };
      try {
        resume = await this.apply(rule, done);
      } catch (e) {
        this.log.warn({ rule: rule._id, err: (e as Error).message }, 'lifecycle rule pass failed; retrying next pass');
      }
      await this.Rule.updateOne(
        { _id: rule._id },
        {
          $set: { leaseUntil: null, lastRunAt: new Date(), resume },
          $inc: { deletedAssets: done.deleted, expiredVersions: done.expired },
        },
      );
    }
    return ran;
  }

  /** Applies one rule to the next batch of the account's assets; returns where the next pass goes on. */
  private async apply(rule: LifecycleRuleDoc, done: { deleted: number; expired: number }): Promise<LifecycleRuleDoc['resume']> {
    const cutoff = new Date(this.clock.now().getTime() - rule.ageDays * DAY_MS);
    // An asset made after the cutoff has nothing old enough: its versions are all younger.
    const filter: Record<string, unknown> = { accountId: rule.accountId, status: { $in: SETTLED }, createdAt: { $lte: cutoff } };
    if (rule.prefix) filter.key = { $regex: `^${escapeRe(rule.prefix)}` };
    if (rule.action === 'expire_versions') filter['versions.1'] = { $exists: true };
    if (rule.resume) {
      const at = new Date(rule.resume.createdAt);
      filter.$or = [{ createdAt: { $gt: at } }, { createdAt: at, _id: { $gt: rule.resume.id } }];
    }
    const batch = await this.Asset.find(filter, { outbox: 0 })
      .sort({ createdAt: 1, _id: 1 })
      .limit(RULE_BATCH)
      .lean<AssetDoc[]>()
      .exec();
    for (const a of batch) {
      // Checked again here: the prefix is literal and the asset may have moved since the query.
      if (rule.prefix && !a.key.startsWith(rule.prefix)) continue;
      if (rule.action === 'delete') done.deleted += await this.deleteIfOld(rule, a, cutoff);
      else done.expired += await this.expire(a, cutoff);
    }
    const last = batch[batch.length - 1];
    return batch.length === RULE_BATCH && last ? { createdAt: last.createdAt, id: last._id } : null;
  }

  private get Asset() {
    return this.assets.m.Asset;
  }

  /** The rule acts as a member key of the account with read and write scopes (the delete path checks both). */
  private principalOf(rule: LifecycleRuleDoc): Principal {
    return {
      accountId: rule.accountId,
      accountSlug: '',
      plan: 'free',
      keyId: `lifecycle:${rule._id}`,
      role: 'member',
      scopes: [SCOPES.read, SCOPES.write],
    };
  }

  private async deleteIfOld(rule: LifecycleRuleDoc, a: AssetDoc, cutoff: Date): Promise<number> {
    const current = a.versions.find((v) => v.number === a.currentVersion);
    if (!current || new Date(current.createdAt) > cutoff) return 0;
    try {
      await this.assets.requestDelete(this.principalOf(rule), a._id, String(a.revision));
      return 1;
    } catch (e) {
      // Changed or deleted since it was read: the next pass over it decides again.
      if (isPlatformError(e) && (e.status === 412 || e.status === 404)) return 0;
      throw e;
    }
  }

  /** Drops the asset's expired versions in one revision-guarded update, then their unused bytes. */
  private async expire(a: AssetDoc, cutoff: Date): Promise<number> {
    const old = expiredVersions(a, cutoff);
    if (old.length === 0) return 0;
    const numbers = old.map((v) => v.number);
    const update = this.assets.prepareGuardedUpdate(
      { accountId: a.accountId, id: a._id, revision: a.revision },
      { $pull: { versions: { number: { $in: numbers } } }, $inc: { revision: 1 }, $set: { updatedAt: new Date() } },
    );
    const updated = await this.Asset.findOneAndUpdate(
      { _id: a._id, accountId: a.accountId, revision: a.revision, status: { $ne: 'deleting' } },
      update,
      { new: true, projection: { outbox: 0 } },
    )
      .lean<AssetDoc>()
      .exec();
    if (!updated) return 0;
    this.assets.forget(a._id);
    this.assets.nudge();
    const regions = [a.homeRegion, ...a.replicaRegions];
    for (const sha of new Set(old.map((v) => v.sha256))) await this.assets.uploads.dropBlobIfUnused(sha, regions);
    await this.assets.uploads.release(
      a.accountId,
      old.reduce((s, v) => s + v.size, 0),
    );
    return old.length;
  }
}
