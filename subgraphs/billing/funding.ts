import { isDuplicateKey } from '../../core/mongo';
import type { BillingModels, FundingDoc, FundingMode, Product } from './model';
import { PRODUCTS } from './model';

export interface FundingPreference {
  product: Product;
  mode: FundingMode;
  /** Null while the product is on the default (`managed`) and never set. */
  updatedAt: Date | null;
}

/** Funding preferences: one per (account, product); `managed` (draws credits) unless set to `byok`. */
export class Funding {
  constructor(private readonly models: BillingModels) {}

  async list(accountId: string): Promise<FundingPreference[]> {
    const docs = await Promise.all(PRODUCTS.map((p) => this.models.Funding.findById(fundingId(accountId, p)).lean<FundingDoc>()));
    return PRODUCTS.map((product, i) => ({ product, mode: docs[i]?.mode ?? 'managed', updatedAt: docs[i]?.updatedAt ?? null }));
  }

  async modeOf(accountId: string, product: Product): Promise<FundingMode> {
    const doc = await this.models.Funding.findById(fundingId(accountId, product)).lean<FundingDoc>();
    return doc?.mode ?? 'managed';
  }

  /** Last write wins: a preference is a setting, not a guarded record. */
  async set(accountId: string, product: Product, mode: FundingMode): Promise<void> {
    const write = () =>
      this.models.Funding.updateOne(
        { _id: fundingId(accountId, product) },
        { $set: { mode, updatedAt: new Date() }, $setOnInsert: { accountId, product } },
        { upsert: true },
      );
    try {
      await write();
    } catch (e) {
      // Two first writes raced to insert: the loser's update now finds the document.
      if (!isDuplicateKey(e)) throw e;
      await write();
    }
  }
}

/** `_id` is `<account>:<product>`, so every read is a point read by the unique `_id`. */
const fundingId = (accountId: string, product: Product) => `${accountId}:${product}`;
