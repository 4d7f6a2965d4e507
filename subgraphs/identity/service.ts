import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Connection } from 'mongoose';
import { badRequest, notFound, unauthenticated } from '../../core/errors';
import { isDuplicateKey, insertOne } from '../../core/mongo';
import { defaultScopesOfRole, effectiveScopes, scopesOfRole } from '../../core/scopes';
import { SUBSCRIPTION_STATES, type SubscriptionState } from '../../core/account-standing';
import { KEY_MODES, type KeyMode, type Plan, type Principal, type Role } from '../../core/principal';
import { type AccountDoc, type IdentityModels, type ProjectDoc, identityModels } from './model';
import { AccountSenders } from './senders';

export const ROLES: readonly Role[] = ['owner', 'member', 'read_only'];
export const PLANS: readonly Plan[] = ['free', 'pro'];
const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** Resolved principals are cached this long; a revoked key stops working within it. */
const PRINCIPAL_CACHE_MS = 5_000;
const PRINCIPAL_CACHE_MAX = 10_000;
/** Projects remembered per process (they never change once created; see `findProject`). */
const PROJECT_CACHE_MAX = 10_000;

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

export interface CreatedKey {
  key: string;
  keyId: string;
  prefix: string;
  accountId: string;
  accountSlug: string;
  plan: Plan;
  role: Role;
  scopes: string[];
  mode: KeyMode;
}

/** Accounts, API keys and projects: who may call, and what they own. */
export class IdentityService {
  readonly models: IdentityModels;
  /** The account's verified sender addresses (`platform senders verify`). */
  readonly senders: AccountSenders;
  private readonly cache = new Map<string, { principal: Principal | null; until: number }>();
  /** Lookups in flight per key: concurrent requests of one key share one (the cache expiring under
   * load used to send every in-flight request to the database at once). */
  private readonly pending = new Map<string, Promise<Principal | null>>();
  private readonly projects = new Map<string, ProjectDoc>();

  constructor(conn: Connection) {
    this.models = identityModels(conn);
    this.senders = new AccountSenders(conn);
  }

  /** Finds the account by slug, creating it on first use; `plan` (when given) is set either way. */
  async ensureAccount(slug: string, plan?: Plan): Promise<AccountDoc> {
    if (!SLUG.test(slug)) throw badRequest('invalid_account', 'account slug must be lowercase letters, digits and dashes');
    if (plan && !PLANS.includes(plan)) throw badRequest('invalid_plan', `plan must be one of ${PLANS.join(', ')}`);
    const existing = await this.models.Account.findOne({ slug }).lean();
    if (existing) {
      if (plan && existing.plan !== plan) {
        await this.models.Account.updateOne({ _id: existing._id }, { $set: { plan } });
        this.cache.clear();
        return { ...existing, plan };
      }
      return existing;
    }
    try {
      const created = await this.models.Account.create({ _id: randomUUID(), slug, plan: plan ?? 'free', createdAt: new Date() });
      return created.toObject();
    } catch (e) {
      if (isDuplicateKey(e)) return this.ensureAccount(slug, plan);
      throw e;
    }
  }

  /** `platform accounts set --subscription`: the account's subscription standing (spec 5.4). */
  async setSubscription(slug: string, subscription: SubscriptionState): Promise<AccountDoc> {
    if (!SUBSCRIPTION_STATES.includes(subscription)) {
      throw badRequest('invalid_subscription', `subscription must be one of ${SUBSCRIPTION_STATES.join(', ')}`);
    }
    const account = await this.ensureAccount(slug);
    await this.models.Account.updateOne({ _id: account._id }, { $set: { subscription } });
    return { ...account, subscription };
  }

  async subscriptionOf(accountId: string): Promise<SubscriptionState> {
    const account = await this.models.Account.findById(accountId, { subscription: 1 }).lean();
    return account ? (account.subscription ?? 'active') : 'inactive';
  }

  async createApiKey(opts: {
    accountSlug: string;
    plan?: Plan;
    role?: Role;
    scopes?: string[];
    mode?: KeyMode;
  }): Promise<CreatedKey> {
    const role = opts.role ?? 'owner';
    if (!ROLES.includes(role)) throw badRequest('invalid_role', `role must be one of ${ROLES.join(', ')}`);
    const mode = opts.mode ?? 'live';
    if (!KEY_MODES.includes(mode)) throw badRequest('invalid_mode', `mode must be one of ${KEY_MODES.join(', ')}`);
    const account = await this.ensureAccount(opts.accountSlug, opts.plan);
    const prefix = `pk_${randomBytes(6).toString('hex')}`;
    const key = `${prefix}_${randomBytes(24).toString('base64url')}`;
    const keyId = randomUUID();
    const given = [...new Set((opts.scopes ?? []).map((s) => s.trim()).filter(Boolean))];
    const allowed: readonly string[] = scopesOfRole(role);
    const refused = given.filter((s) => !allowed.includes(s));
    if (refused.length) {
      throw badRequest('invalid_scope', `scopes not known or not allowed for role ${role}: ${refused.join(', ')}`);
    }
    // No scopes given: the role's defaults, stored, so the key's reach is visible and fixed.
    const scopes = given.length ? given : defaultScopesOfRole(role);
    await this.models.ApiKey.create({
      _id: keyId,
      accountId: account._id,
      prefix,
      hash: sha256(key),
      role,
      scopes,
      mode,
      createdAt: new Date(),
    });
    return { key, keyId, prefix, accountId: account._id, accountSlug: account.slug, plan: account.plan, role, scopes, mode };
  }

  /**
   * `platform keys revoke`: the key stops here at once and in every other process within the
   * principal cache's 5 s (open subscriptions are re-checked by the router). Revoking twice keeps
   * the first revocation time; an unknown key id is a 404.
   */
  async revokeApiKey(keyId: string): Promise<{ keyId: string; revokedAt: Date }> {
    await this.models.ApiKey.updateOne({ _id: keyId, revokedAt: null }, { $set: { revokedAt: new Date() } });
    this.cache.clear();
    const record = await this.models.ApiKey.findById(keyId, { revokedAt: 1 }).lean();
    if (!record?.revokedAt) throw notFound('key_not_found', 'no API key with this id');
    return { keyId, revokedAt: record.revokedAt };
  }

  /** Whether the key `keyId` of `accountId` exists and is not revoked (one lookup by id; no cache, so a revocation ends derived credentials at once). */
  async isKeyLive(accountId: string, keyId: string): Promise<boolean> {
    return !!(await this.models.ApiKey.exists({ _id: keyId, accountId, revokedAt: null }));
  }

  /** The principal a bearer key stands for, or null when the key is unknown, revoked or malformed. */
  async authenticate(rawKey: string, opts: { fresh?: boolean } = {}): Promise<Principal | null> {
    const hit = opts.fresh ? undefined : this.cache.get(rawKey);
    if (hit && hit.until > Date.now()) return hit.principal;
    const inFlight = opts.fresh ? undefined : this.pending.get(rawKey);
    if (inFlight) return inFlight;
    const lookup = this.lookup(rawKey)
      .then((principal) => {
        if (this.cache.size >= PRINCIPAL_CACHE_MAX) this.cache.clear();
        this.cache.set(rawKey, { principal, until: Date.now() + PRINCIPAL_CACHE_MS });
        return principal;
      })
      .finally(() => this.pending.delete(rawKey));
    this.pending.set(rawKey, lookup);
    return lookup;
  }

  private async lookup(rawKey: string): Promise<Principal | null> {
    const m = /^(pk_[0-9a-f]{12})_[A-Za-z0-9_-]{32}$/.exec(rawKey);
    if (!m) return null;
    const record = await this.models.ApiKey.findOne({ prefix: m[1] }).lean();
    if (!record || record.revokedAt) return null;
    const given = Buffer.from(sha256(rawKey));
    if (!timingSafeEqual(given, Buffer.from(record.hash))) return null;
    const account = await this.models.Account.findById(record.accountId).lean();
    if (!account) return null;
    return {
      accountId: account._id,
      accountSlug: account.slug,
      plan: account.plan,
      keyId: record._id,
      role: record.role,
      scopes: effectiveScopes(record.role, record.scopes),
      mode: record.mode ?? 'live',
    };
  }

  requirePrincipal(principal: Principal | null): Principal {
    if (!principal) throw unauthenticated();
    return principal;
  }

  async createProject(
    accountId: string,
    name: string,
    sourceType: string | null = null,
    opts: { id?: string } = {},
  ): Promise<ProjectDoc> {
    const trimmed = name.trim();
    if (!trimmed || trimmed.length > 100) throw badRequest('invalid_name', 'project name must be 1 to 100 characters');
    try {
      return await insertOne(this.models.Project, {
        _id: opts.id ?? randomUUID(),
        accountId,
        name: trimmed,
        sourceType,
        createdAt: new Date(),
      });
    } catch (e) {
      // A given id that exists for this account is the same project (a resumed create).
      if (!opts.id || !isDuplicateKey(e)) throw e;
      const existing = await this.models.Project.findById(opts.id).lean();
      if (!existing || existing.accountId !== accountId) throw e;
      return existing;
    }
  }

  /** A project the principal may see; any other (missing or another account's) is a 404. */
  async getProject(principal: Principal | null, projectId: string): Promise<ProjectDoc> {
    const p = this.requirePrincipal(principal);
    const project = await this.findProject(projectId);
    if (!project || project.accountId !== p.accountId) throw notFound('project_not_found', 'project not found');
    return project;
  }

  /**
   * A project by id. Projects are never renamed, moved or deleted once created, so one found is
   * kept (per process, bounded) and later reads — every site metadata request names its project —
   * skip the database; a missing one is always asked again (another process may create it). A
   * change to a project's fields would have to drop it from `projects` (and other processes' copies).
   */
  async findProject(projectId: string): Promise<ProjectDoc | null> {
    const kept = this.projects.get(projectId);
    if (kept) return kept;
    const project = await this.models.Project.findById(projectId).lean();
    if (project) {
      if (this.projects.size >= PROJECT_CACHE_MAX) this.projects.delete(this.projects.keys().next().value as string);
      this.projects.set(projectId, project);
    }
    return project;
  }

  async listProjects(principal: Principal | null): Promise<ProjectDoc[]> {
    const p = this.requirePrincipal(principal);
    return this.models.Project.find({ accountId: p.accountId }).sort({ createdAt: -1 }).limit(500).lean();
  }

  async canAccessProject(principal: Principal | null, projectId: string): Promise<boolean> {
    if (!principal) return false;
    const project = await this.findProject(projectId);
    return Boolean(project && project.accountId === principal.accountId);
  }
}
