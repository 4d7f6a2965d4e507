import mongoose, { type Connection, type Model } from 'mongoose';
import { SUBSCRIPTION_STATES, type SubscriptionState } from '../../core/account-standing';
import { model } from '../../core/mongo';
import type { KeyMode, Plan, Role } from '../../core/principal';

export interface AccountDoc {
  _id: string;
  slug: string;
  plan: Plan;
  /** Subscription standing (spec 5.4); accounts stored before it existed read as `active`. */
  subscription?: SubscriptionState;
  createdAt: Date;
}

export interface ApiKeyDoc {
  _id: string;
  accountId: string;
  /** Shown to users to recognise a key (`pk_ab12cd34`); the key itself is stored only hashed. */
  prefix: string;
  hash: string;
  role: Role;
  scopes: string[];
  /** Absent on keys created before modes existed: `live`. */
  mode?: KeyMode;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export interface ProjectDoc {
  _id: string;
  accountId: string;
  name: string;
  /** The kind of thing hosted (e.g. `publisher`); null for a bare project. */
  sourceType: string | null;
  createdAt: Date;
}

const accountSchema = new mongoose.Schema<AccountDoc>(
  {
    _id: String,
    slug: { type: String, required: true, unique: true },
    plan: { type: String, required: true, enum: ['free', 'pro'] },
    subscription: { type: String, enum: SUBSCRIPTION_STATES, default: 'active' },
    createdAt: { type: Date, required: true },
  },
  { collection: 'accounts', versionKey: false },
);

const apiKeySchema = new mongoose.Schema<ApiKeyDoc>(
  {
    _id: String,
    accountId: { type: String, required: true, index: true },
    prefix: { type: String, required: true, unique: true },
    hash: { type: String, required: true },
    role: { type: String, required: true, enum: ['owner', 'member', 'read_only'] },
    scopes: { type: [String], default: [] },
    mode: { type: String, enum: ['live', 'test'], default: 'live' },
    createdAt: { type: Date, required: true },
    lastUsedAt: { type: Date, default: null },
    revokedAt: { type: Date, default: null },
  },
  { collection: 'api_keys', versionKey: false },
);

const projectSchema = new mongoose.Schema<ProjectDoc>(
  {
    _id: String,
    accountId: { type: String, required: true },
    name: { type: String, required: true },
    sourceType: { type: String, default: null },
    createdAt: { type: Date, required: true },
  },
  { collection: 'projects', versionKey: false },
);
projectSchema.index({ accountId: 1, createdAt: -1 });

export interface IdentityModels {
  Account: Model<AccountDoc>;
  ApiKey: Model<ApiKeyDoc>;
  Project: Model<ProjectDoc>;
}

export function identityModels(conn: Connection): IdentityModels {
  return {
    Account: model(conn, 'identity', 'Account', accountSchema),
    ApiKey: model(conn, 'identity', 'ApiKey', apiKeySchema),
    Project: model(conn, 'identity', 'Project', projectSchema),
  };
}
