import { type Connection, type Model, Schema } from 'mongoose';
import { model } from '../../../core/mongo';

/** Spec 2.3 lifecycle rule actions. */
export const LIFECYCLE_ACTIONS = ['delete', 'expire_versions'] as const;
export type LifecycleAction = (typeof LIFECYCLE_ACTIONS)[number];

export interface LifecycleRuleDoc {
  _id: string;
  accountId: string;
  name: string;
  /** Literal key prefix; null applies to every key. */
  prefix: string | null;
  action: LifecycleAction;
  ageDays: number;
  enabled: boolean;
  /** Where the next pass continues in the account's assets (`createdAt`, `_id`); null = from the start. */
  resume: { createdAt: Date; id: string } | null;
  /** Until when the worker that claimed the rule owns it (a dead worker's claim lapses). */
  leaseUntil: Date | null;
  lastRunAt: Date | null;
  /** What the rule has done so far (assets it started deleting, versions it expired). */
  deletedAssets: number;
  expiredVersions: number;
  createdAt: Date;
}

const ruleSchema = new Schema<LifecycleRuleDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    name: { type: String, required: true },
    prefix: { type: String, default: null },
    action: { type: String, required: true },
    ageDays: { type: Number, required: true },
    enabled: { type: Boolean, required: true },
    resume: { type: Schema.Types.Mixed, default: null },
    leaseUntil: { type: Date, default: null },
    lastRunAt: { type: Date, default: null },
    deletedAssets: { type: Number, default: 0 },
    expiredVersions: { type: Number, default: 0 },
    createdAt: { type: Date, required: true },
  },
  { collection: 'asset_lifecycle_rules', versionKey: false, minimize: false },
);
// One name per account (409 on a second rule of the same name).
ruleSchema.index({ accountId: 1, name: 1 }, { unique: true, name: 'lifecycle_rule_name' });
ruleSchema.index({ enabled: 1, lastRunAt: 1 });

export const lifecycleRuleModel = (conn: Connection): Model<LifecycleRuleDoc> =>
  model(conn, 'assets', 'LifecycleRule', ruleSchema);
