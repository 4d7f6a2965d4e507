import mongoose, { type Connection, type Model } from 'mongoose';
import { isDuplicateKey, model } from '../../core/mongo';
import { badRequest, conflict, forbidden } from '../../core/errors';
import { type Principal, requireWriter, requirePrincipal } from '../../core/principal';
import { normalizeAuditDomain } from './audit-input';
import { parseProvider, type Provider, STEP_IDS } from './migration';

/**
 * The authenticated migration checklist (spec 4.8 rule 9): the workspace's own record of which
 * steps it has done for one domain and provider. It proves nothing about DNS or traffic (spec 3.7).
 * One document per account, domain and provider, keyed by that triple in `_id` so every read and
 * write is an exact-key match; a write is one conditional update on the revision it read.
 */
export interface ChecklistDoc {
  _id: string;
  accountId: string;
  domain: string;
  provider: Provider;
  completed: string[];
  revision: number;
  updatedAt: Date;
}

const checklistSchema = new mongoose.Schema<ChecklistDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    domain: { type: String, required: true },
    provider: { type: String, required: true },
    completed: { type: [String], default: [] },
    revision: { type: Number, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'mail_checklists', versionKey: false },
);

export function checklistModel(conn: Connection): Model<ChecklistDoc> {
  return model<ChecklistDoc>(conn, 'mail', 'Checklist', checklistSchema);
}

export interface ChecklistView {
  domain: string;
  provider: Provider;
  completed: string[];
  revision: number;
  updatedAt: Date | null;
}

/** Checklist routes need a live workspace key; a test-mode key is refused (spec 5.6). */
export function requireLiveKey(principal: Principal | null | undefined): Principal {
  const p = requirePrincipal(principal);
  const mode = (p as Principal & { mode?: string }).mode;
  if (mode === 'test') throw forbidden('live_key_required', 'migration checklists need a live key; test keys cannot use them');
  return p;
}

const view = (
  d: Pick<ChecklistDoc, 'domain' | 'provider' | 'completed' | 'revision'> & { updatedAt: Date | null },
): ChecklistView => ({
  domain: d.domain,
  provider: d.provider,
  completed: d.completed,
  revision: d.revision,
  updatedAt: d.updatedAt,
});

const stale = (current: number) =>
  conflict('revision_conflict', 'the checklist changed since it was read; reload it and apply the change again', {
    currentRevision: current,
  });

export class ChecklistService {
  constructor(private readonly model: Model<ChecklistDoc>) {}

  async get(principal: Principal | null, input: { domain: unknown; provider: unknown }): Promise<ChecklistView> {
    const p = requireLiveKey(principal);
    const domain = normalizeAuditDomain(input.domain);
    const provider = parseProvider(input.provider);
    const doc = await this.model.findById(`${p.accountId}:${domain}:${provider}`).lean();
    // Nothing saved yet: revision 0, which the first PUT must name.
    return doc ? view(doc) : { domain, provider, completed: [], revision: 0, updatedAt: null };
  }

  async put(
    principal: Principal | null,
    input: { domain: unknown; provider: unknown; completed: string[]; revision: number },
  ): Promise<ChecklistView> {
    const p = requireLiveKey(principal);
    requireWriter(p);
    const domain = normalizeAuditDomain(input.domain);
    const provider = parseProvider(input.provider);
    const unknown = input.completed.filter((s) => !(STEP_IDS as readonly string[]).includes(s));
    if (unknown.length) {
      throw badRequest('invalid_step', `unknown checklist step: ${unknown.join(', ')}`, {
        unknownSteps: unknown,
        allowed: [...STEP_IDS],
      });
    }
    // Stored in the spec's step order, each once.
    const completed = STEP_IDS.filter((s) => input.completed.includes(s));
    const _id = `${p.accountId}:${domain}:${provider}`;
    const updatedAt = new Date();
    if (input.revision === 0) {
      try {
        const created = await this.model.create({
          _id,
          accountId: p.accountId,
          domain,
          provider,
          completed,
          revision: 1,
          updatedAt,
        });
        return view(created.toObject());
      } catch (e) {
        if (!isDuplicateKey(e)) throw e;
        const current = await this.model.findById(_id).lean();
        throw stale(current?.revision ?? 0);
      }
    }
    const updated = await this.model
      .findOneAndUpdate(
        { _id, revision: input.revision },
        { $set: { completed, updatedAt }, $inc: { revision: 1 } },
        { new: true },
      )
      .lean();
    if (!updated) {
      const current = await this.model.findById(_id).lean();
      throw stale(current?.revision ?? 0);
    }
    return view(updated);
  }
}
