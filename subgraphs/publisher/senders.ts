import mongoose, { type Connection, type Model } from 'mongoose';
import { badRequest, isPlatformError } from '../../core/errors';
import { normalizeDomain } from './domain';

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

/** Longest e-mail address (RFC 5321 path limit), in characters. */
export const MAX_EMAIL_LENGTH = 254;
const LOCAL_PART = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;

/**
 * An address as stored and compared: dot-atom local part (at most 64 characters) and a domain
 * normalised like custom domains (punycode), all lowercase. Throws 400 `invalid_email`.
 */
export function normalizeEmail(input: string, field = 'email'): string {
  const invalid = () => badRequest('invalid_email', `${field} is not a valid e-mail address`, { field });
  if (typeof input !== 'string' || input.length > MAX_EMAIL_LENGTH * 2) throw invalid();
  const at = input.lastIndexOf('@');
  if (at <= 0) throw invalid();
  const local = input.slice(0, at);
  if (local.length > 64 || !LOCAL_PART.test(local)) throw invalid();
  let domain: string;
  try {
    domain = normalizeDomain(input.slice(at + 1));
  } catch (e) {
    if (isPlatformError(e)) throw invalid();
    throw e;
  }
  const email = `${local.toLowerCase()}@${domain}`;
  if (email.length > MAX_EMAIL_LENGTH) throw invalid();
  return email;
}

/** The account's sender addresses and their verification. */
export class AccountSenders {
  readonly model: Model<AccountSenderDoc>;
  constructor(conn: Connection) {
    this.model = (conn.models.AccountSender as Model<AccountSenderDoc>) ?? conn.model('AccountSender', senderSchema);
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
