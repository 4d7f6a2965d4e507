import mongoose, { type Connection, type Model } from 'mongoose';
import { model } from '../../core/mongo';
import { normalizeEmail } from '../../core/domain-names';

/** An address an account proved it controls; only verified ones may send a site's mail. */
export interface AccountSenderDoc {
  /** `<accountId>:<email>`: one record per account and address. */
  _id: string;
  accountId: string;
  email: string;
  verified: boolean;
  verifiedAt: Date | null;
  createdAt: Date;
}

const senderSchema = new mongoose.Schema<AccountSenderDoc>(
  {
    _id: String,
    accountId: { type: String, required: true, index: true },
    email: { type: String, required: true },
    verified: { type: Boolean, required: true },
    verifiedAt: { type: Date, default: null },
    createdAt: { type: Date, required: true },
  },
  { collection: 'account_senders', versionKey: false },
);

/** The account's sender addresses and their verification. */
export class AccountSenders {
  readonly model: Model<AccountSenderDoc>;
  constructor(conn: Connection) {
    this.model = model(conn, 'identity', 'AccountSender', senderSchema);
  }

  /** Marks `email` verified for the account (creating the record); idempotent. */
  async verify(accountId: string, email: string): Promise<AccountSenderDoc> {
    const normalized = normalizeEmail(email);
    const now = new Date();
    const doc = await this.model
      .findOneAndUpdate(
        { _id: `${accountId}:${normalized}` },
        {
          $set: { verified: true, verifiedAt: now },
          $setOnInsert: { accountId, email: normalized, createdAt: now },
        },
        { upsert: true, new: true },
      )
      .lean();
    return doc!;
  }

  /** True when the (normalised) address is a verified sender of the account. */
  async isVerified(accountId: string, normalizedEmail: string): Promise<boolean> {
    const doc = await this.model.findById(`${accountId}:${normalizedEmail}`).lean();
    return Boolean(doc?.verified);
  }
}
