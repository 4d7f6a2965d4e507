import { createHash } from 'node:crypto';
import { isDuplicateKey } from '../../core/mongo';
import { paymentRequired } from '../../core/errors';
import type { Plan } from '../../core/principal';
import type { BalanceDoc, BillingModels, EntryDoc, EntryKind, FundingMode, Product } from './model';
import { MONTHLY_ALLOCATION, periodOf } from './periods';

/** Applied entry ids the balance remembers beyond its journal (see BalanceDoc.recent). */
export const RECENT_IDS = 64;
/** What a hot-path update returns: the counters, not the id lists it rewrote. */
const COUNTERS_ONLY = { journal: 0, recent: 0 };
/** A journal entry older than this lost its writer (the process died): any caller may move it. */
export const ORPHAN_AFTER_MS = 10_000;
/** Conditional updates that lost to a rollover or a plan change are retried this often. */
const MAX_ATTEMPTS = 8;

export interface NewEntry {
  id: string;
  kind: EntryKind;
  credits: number;
  delta: number;
  product?: Product | null;
  funding?: FundingMode | null;
  source: string;
  description?: string | null;
}

export interface Applied {
  entry: EntryDoc;
  balance: BalanceDoc;
  /** True when the entry id had been applied before: nothing changed now. */
  replayed: boolean;
}

/** A stable entry id (UUID-shaped) for a caller's idempotency key, scoped to the account. */
export function entryIdFor(accountId: string, kind: string, key: string): string {
  const h = createHash('sha256').update(`${accountId}\u0000${kind}\u0000${key}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h[16], 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Which balance counter an entry moves besides `available`. */
function counterOf(e: NewEntry): Record<string, number> {
  switch (e.kind) {
    case 'usage':
      return e.funding === 'byok' ? { byokUsedThisPeriod: e.credits } : { usedThisPeriod: e.credits };
    case 'top_up':
      return { topUpsThisPeriod: e.credits };
    case 'adjustment':
      return { adjustmentsThisPeriod: e.delta };
    case 'allocation':
      return { allocation: e.delta };
  }
}

/**
 * The AI-credit ledger. Every change is an immutable entry; the balance document is changed only by
 * single conditional updates that carry their entry in the same write (no transactions exist on the
 * MongoDB-wire server, docs/decisions/0001). Invariant: `available` = the sum of the entries' deltas
 * = carried over + allocation + top-ups + adjustments − managed usage of the period.
 */
export class Ledger {
  constructor(
    private readonly models: BillingModels,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * The account's balance in the current UTC month. The first touch of a month grants its allocation
   * (and expires the unused allocation of the last one) through a compare-and-swap on the revision,
   * so however many callers race, a month is granted once — no cron, nothing to double.
   * `plan` is the plan the caller knows (a principal carries it); an upgrade seen within a month
   * raises that month's allocation to the new plan's.
   */
  async balance(accountId: string, plan: Plan | null = null): Promise<BalanceDoc> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const doc = await this.models.Balance.findById(accountId, { recent: 0 }).lean<BalanceDoc>();
      const now = this.now();
      const period = periodOf(now);
      if (!doc) {
        const created = await this.open(accountId, plan ?? 'free', period.key, now);
        if (created) return created;
        continue;
      }
      if (doc.period < period.key) {
        const rolled = await this.rollOver(doc, plan ?? doc.plan, period.key, now);
        if (rolled) return rolled;
        continue;
      }
      if (plan && MONTHLY_ALLOCATION[plan] > doc.allocation) {
        const raised = await this.raiseAllocation(doc, plan, now);
        if (raised) return raised;
        continue;
      }
      if (plan && plan !== doc.plan) {
        // A downgrade takes effect with the next month's allocation.
        await this.models.Balance.updateOne({ _id: accountId }, { $set: { plan } });
      }
      await this.moveOrphans(doc, now);
      return doc;
    }
    throw new Error(`balance of ${accountId} kept changing under ${MAX_ATTEMPTS} attempts`);
  }

  /**
   * Applies one entry, once: `requireFunds` refuses (402 `insufficient_credits`) an entry that would
   * take `available` below zero, checked in the same conditional update that applies it.
   */
  async apply(accountId: string, plan: Plan | null, input: NewEntry, requireFunds: boolean): Promise<Applied> {
    const stored = await this.models.Entry.findById(input.id).lean<EntryDoc>();
    if (stored) return { entry: stored, balance: await this.balance(accountId, plan), replayed: true };
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const now = this.now();
      // Hot path: try the current month straight away; only a miss (no balance yet, a new month,
      // or a plan to check) reads the balance first, which opens or rolls it over.
      const period = plan || attempt > 0 ? (await this.balance(accountId, plan)).period : periodOf(now).key;
      const entry: EntryDoc = {
        _id: input.id,
        accountId,
        kind: input.kind,
        credits: input.credits,
        delta: input.delta,
        product: input.product ?? null,
        funding: input.funding ?? null,
        source: input.source,
        description: input.description ?? null,
        period,
        balanceAfter: null,
        seq: null,
        createdAt: now,
      };
      const filter: Record<string, unknown> = {
        _id: accountId,
        period,
        'journal._id': { $ne: input.id },
        recent: { $ne: input.id },
      };
      if (requireFunds && input.delta < 0) filter.available = { $gte: -input.delta };
      const updated = await this.models.Balance.findOneAndUpdate(
        filter,
        {
          $inc: { available: input.delta, revision: 1, ...counterOf(input) },
          $set: { updatedAt: now },
          $push: { journal: entry, recent: { $each: [input.id], $slice: -RECENT_IDS } },
        },
        { new: true, projection: COUNTERS_ONLY },
      ).lean<BalanceDoc>();
      if (updated) {
        const done = { ...entry, balanceAfter: updated.available, seq: updated.revision };
        await this.moveOut(accountId, [done]);
        return {
          entry: done,
          balance: { ...updated, journal: [], recent: [] },
          replayed: false,
        };
      }
      const fresh = await this.models.Balance.findById(accountId).lean<BalanceDoc>();
      if (!fresh) continue;
      if (fresh.recent.includes(input.id) || fresh.journal.some((e) => e._id === input.id)) {
        return { entry: await this.appliedEntry(fresh, input.id), balance: fresh, replayed: true };
      }
      if (fresh.period === period && requireFunds && fresh.available < -input.delta) {
        throw paymentRequired('insufficient_credits', 'not enough AI credits for this usage', {
          available: fresh.available,
          requested: -input.delta,
        });
      }
    }
    throw new Error(`entry ${input.id} could not be applied in ${MAX_ATTEMPTS} attempts`);
  }

  /** The account's last position and the entries still in its journal (none once they moved out). */
  async head(accountId: string): Promise<{ revision: number; journal: EntryDoc[] }> {
    const doc = await this.models.Balance.findById(accountId, { revision: 1, journal: 1 }).lean<BalanceDoc>();
    return { revision: doc?.revision ?? 0, journal: doc?.journal ?? [] };
  }

  /** The entry at `seq`, or null (a gap, or one still in the journal). */
  async at(accountId: string, seq: number): Promise<EntryDoc | null> {
    return this.models.Entry.findOne({ accountId, seq }).lean<EntryDoc>();
  }

  private async open(accountId: string, plan: Plan, periodKey: string, now: Date): Promise<BalanceDoc | null> {
    const amount = MONTHLY_ALLOCATION[plan];
    const grant = this.entry(accountId, 'allocation', `allocation:${accountId}:${periodKey}`, amount, periodKey, now, {
      source: 'plan.allocation',
      description: `${plan} plan monthly allocation for ${periodKey}`,
      balanceAfter: amount,
      seq: 1,
    });
    const doc: BalanceDoc = {
      _id: accountId,
      plan,
      period: periodKey,
      allocation: amount,
      carriedOver: 0,
      usedThisPeriod: 0,
      byokUsedThisPeriod: 0,
      topUpsThisPeriod: 0,
      adjustmentsThisPeriod: 0,
      available: amount,
      revision: 1,
      journal: [grant],
      recent: [grant._id],
      createdAt: now,
      updatedAt: now,
    };
    try {
      await this.models.Balance.collection.insertOne(doc as never);
    } catch (e) {
      if (isDuplicateKey(e)) return null;
      throw e;
    }
    await this.moveOut(accountId, [grant]);
    return { ...doc, journal: [] };
  }

  private async rollOver(doc: BalanceDoc, plan: Plan, periodKey: string, now: Date): Promise<BalanceDoc | null> {
    // Usage draws the allocation first, so what is left of it is allocation − managed usage.
    const expired = Math.max(0, Math.min(doc.available, doc.allocation - doc.usedThisPeriod));
    const carried = doc.available - expired;
    const amount = MONTHLY_ALLOCATION[plan];
    const entries: EntryDoc[] = [];
    if (expired > 0) {
      entries.push(
        this.entry(doc._id, 'adjustment', `expiry:${doc._id}:${doc.period}`, -expired, periodKey, now, {
          source: 'plan.allocation_expiry',
          description: `unused allocation of ${doc.period} expired`,
          balanceAfter: carried,
          seq: doc.revision + 1,
        }),
      );
    }
    entries.push(
      this.entry(doc._id, 'allocation', `allocation:${doc._id}:${periodKey}`, amount, periodKey, now, {
        source: 'plan.allocation',
        description: `${plan} plan monthly allocation for ${periodKey}`,
        balanceAfter: carried + amount,
        seq: doc.revision + entries.length + 1,
      }),
    );
    const updated = await this.models.Balance.findOneAndUpdate(
      { _id: doc._id, revision: doc.revision },
      {
        $set: {
          plan,
          period: periodKey,
          allocation: amount,
          carriedOver: carried,
          usedThisPeriod: 0,
          byokUsedThisPeriod: 0,
          topUpsThisPeriod: 0,
          adjustmentsThisPeriod: 0,
          available: carried + amount,
          updatedAt: now,
        },
        $inc: { revision: entries.length },
        $push: { journal: { $each: entries }, recent: { $each: entries.map((e) => e._id), $slice: -RECENT_IDS } },
      },
      { new: true },
    ).lean<BalanceDoc>();
    if (!updated) return null;
    await this.moveOut(doc._id, entries);
    return updated;
  }

  private async raiseAllocation(doc: BalanceDoc, plan: Plan, now: Date): Promise<BalanceDoc | null> {
    const diff = MONTHLY_ALLOCATION[plan] - doc.allocation;
    const grant = this.entry(doc._id, 'allocation', `allocation:${doc._id}:${doc.period}:${plan}`, diff, doc.period, now, {
      source: 'plan.upgrade',
      description: `allocation raised to the ${plan} plan for ${doc.period}`,
      balanceAfter: doc.available + diff,
      seq: doc.revision + 1,
    });
    const updated = await this.models.Balance.findOneAndUpdate(
      { _id: doc._id, revision: doc.revision },
      {
        $set: { plan, updatedAt: now },
        $inc: { allocation: diff, available: diff, revision: 1 },
        $push: { journal: grant, recent: { $each: [grant._id], $slice: -RECENT_IDS } },
      },
      { new: true },
    ).lean<BalanceDoc>();
    if (!updated) return null;
    await this.moveOut(doc._id, [grant]);
    return updated;
  }

  private entry(
    accountId: string,
    kind: EntryKind,
    id: string,
    delta: number,
    period: string,
    now: Date,
    more: { source: string; description: string; balanceAfter: number; seq: number },
  ): EntryDoc {
    return {
      _id: entryIdFor(accountId, kind, id),
      accountId,
      kind,
      credits: delta,
      delta,
      product: null,
      funding: null,
      period,
      createdAt: now,
      ...more,
    };
  }

  /** Copies entries from the journal to the entry collection (idempotent), then pulls them. */
  private async moveOut(accountId: string, entries: EntryDoc[]): Promise<void> {
    if (entries.length === 0) return;
    try {
      await this.models.Entry.collection.insertMany(entries as never[], { ordered: false });
    } catch (e) {
      const errors = (e as { writeErrors?: { code?: number }[] }).writeErrors;
      if (!(isDuplicateKey(e) || (errors && errors.every((w) => w.code === 11000)))) throw e;
    }
    await this.models.Balance.updateOne({ _id: accountId }, { $pull: { journal: { _id: { $in: entries.map((x) => x._id) } } } });
  }

  /** Journal entries whose writer died before moving them out. */
  private async moveOrphans(doc: BalanceDoc, now: Date): Promise<void> {
    const orphans = (doc.journal ?? []).filter((e) => now.getTime() - new Date(e.createdAt).getTime() > ORPHAN_AFTER_MS);
    if (orphans.length === 0) return;
    // Their own revision died with their writer: take fresh positions (the old ones stay gaps).
    const bumped = await this.models.Balance.findOneAndUpdate(
      { _id: doc._id },
      { $inc: { revision: orphans.length } },
      { new: true, projection: COUNTERS_ONLY },
    ).lean<BalanceDoc>();
    if (!bumped) return;
    const first = bumped.revision - orphans.length + 1;
    await this.moveOut(
      doc._id,
      orphans.map((e, i) => ({ ...e, seq: e.seq ?? first + i })),
    );
  }

  private async appliedEntry(doc: BalanceDoc, id: string): Promise<EntryDoc> {
    for (let i = 0; i < 50; i++) {
      const inJournal = doc.journal.find((e) => e._id === id);
      if (inJournal) return inJournal;
      const stored = await this.models.Entry.findById(id).lean<EntryDoc>();
      if (stored) return stored;
      // Between the two reads the entry moved from the journal to the collection: read again.
      doc = (await this.models.Balance.findById(doc._id).lean<BalanceDoc>()) ?? doc;
    }
    throw new Error(`entry ${id} is applied but could not be read`);
  }
}
