import { badRequest } from '../../../core/errors';
import type { Principal } from '../../../core/principal';
import { AI_MODELS, type AiModel, DEFAULT_AI_MODEL } from './evaluation';
import type { AiConfigDoc, AiModels } from './model';
import { AI_ACTIONS, type AiAction, DEFAULT_MONTHLY_CAP_MICROS, MAX_MONTHLY_CAP_MICROS } from './pricing';
import { requiredRevision, revisionStale } from '../revisions';
import type { AssetsService } from '../storage';
import { SCOPES } from '../records';

/** An account without a stored configuration: every action enabled, the default cap, revision 0. */
export const defaultAiConfig = (accountId: string): AiConfigDoc => ({
  _id: accountId,
  enabledActions: [...AI_ACTIONS],
  monthlySpendCapMicros: DEFAULT_MONTHLY_CAP_MICROS,
  model: DEFAULT_AI_MODEL,
  revision: 0,
  updatedAt: new Date(0),
});

export interface AiConfigInput {
  enabledActions: string[];
  monthlySpendCapMicros: number;
  model?: string | null;
}

/**
 * `GET/PUT /ai/config` (spec 2.3, 4.3). The record's revision is its ETag; PUT replaces it with one
 * conditional write on `{_id, revision}` (an exact unique index): 428 without If-Match, 412 stale.
 * The first PUT (revision 0, nothing stored) is an insert, so of two racing first writers one wins.
 */
export class AiConfigs {
  constructor(
    private readonly m: AiModels,
    private readonly assets: AssetsService,
  ) {}

  async of(accountId: string): Promise<AiConfigDoc> {
    return (await this.m.Config.findById(accountId).lean<AiConfigDoc>().exec()) ?? defaultAiConfig(accountId);
  }

  async get(p: Principal | null): Promise<AiConfigDoc> {
    return this.of(this.assets.reader(p).accountId);
  }

  async put(p: Principal | null, ifMatch: string | null | undefined, input: AiConfigInput): Promise<AiConfigDoc> {
    const { accountId } = this.assets.writer(p, SCOPES.admin);
    const revision = requiredRevision(ifMatch);
    const unknown = input.enabledActions.filter((a) => !(AI_ACTIONS as readonly string[]).includes(a));
    if (unknown.length) throw badRequest('validation_failed', `unknown actions: ${unknown.join(', ')}`);
    if (
      !Number.isInteger(input.monthlySpendCapMicros) ||
      input.monthlySpendCapMicros < 0 ||
      input.monthlySpendCapMicros > MAX_MONTHLY_CAP_MICROS
    )
      throw badRequest('validation_failed', `monthly_spend_cap_micros is an integer from 0 to ${MAX_MONTHLY_CAP_MICROS}`);
    if (input.model && !(AI_MODELS as readonly string[]).includes(input.model))
      throw badRequest('validation_failed', `model is one of ${AI_MODELS.join(', ')}`);
    const current = await this.of(accountId);
    const next = {
      enabledActions: [...new Set(input.enabledActions)] as AiAction[],
      monthlySpendCapMicros: input.monthlySpendCapMicros,
      model: (input.model ?? current.model) as AiModel,
      updatedAt: new Date(),
    };
    if (revision === 0) {
      try {
        await this.m.Config.create({ _id: accountId, ...next, revision: 1 });
        return { _id: accountId, ...next, revision: 1 };
      } catch {
        throw revisionStale(current.revision);
      }
    }
    const saved = await this.m.Config.findOneAndUpdate(
      { _id: accountId, revision },
      { $set: next, $inc: { revision: 1 } },
      { new: true },
    )
      .lean<AiConfigDoc>()
      .exec();
    if (!saved) throw revisionStale(current.revision);
    return saved;
  }
}
