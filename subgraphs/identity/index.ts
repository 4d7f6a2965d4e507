import { normalizeEmail } from '../../core/domain-names';
import { CliUsageError, defineArea } from '../../core/area';
import type { ProjectDirectory, ProjectRecord, VerifiedSenders } from '../../core/ports';
import type { SubscriptionState } from '../../core/account-standing';
import type { KeyMode, Plan, Role } from '../../core/principal';
import type { RequestContext } from '../../core/subgraph-kit';
import type { ProjectDoc } from './model';
import { IdentityResolver, toProject } from './resolvers';
import { IdentityService } from './service';

export { IdentityService } from './service';

const record = (p: ProjectDoc): ProjectRecord => ({
  id: p._id,
  accountId: p.accountId,
  name: p.name,
  sourceType: p.sourceType ?? null,
  createdAt: p.createdAt,
});

const need = (value: unknown, usage: string): string => {
  if (typeof value !== 'string' || !value) throw new CliUsageError(usage);
  return value;
};

/** The identity area: accounts, API keys, projects (owns the `Project` entity), verified senders. */
export default defineArea({
  name: 'identity',
  portOffset: 0,
  services: (ctx) => new IdentityService(ctx.conn),
  provides(identity, ports) {
    const projects: ProjectDirectory = {
      createProject: async (accountId, name, sourceType, opts) =>
        record(await identity.createProject(accountId, name, sourceType, opts)),
      findProject: async (id) => {
        const p = await identity.findProject(id);
        return p ? record(p) : null;
      },
      canAccessProject: (principal, id) => identity.canAccessProject(principal, id),
      ensureAccount: async (slug, plan) => {
        const a = await identity.ensureAccount(slug, plan);
        return { id: a._id, slug: a.slug, plan: a.plan };
      },
    };
    const verified: VerifiedSenders = {
      isVerified: async (accountId, email) => {
        let normalized: string;
        try {
          normalized = normalizeEmail(email);
        } catch {
          return false;
        }
        return identity.senders.isVerified(accountId, normalized);
      },
    };
    ports.provide('projects', projects);
    ports.provide('accountStanding', { subscriptionOf: (accountId) => identity.subscriptionOf(accountId) });
    ports.provide('senders', verified);
    ports.provide('authenticator', { authenticate: (key) => identity.authenticate(key) });
    ports.provide('keyStatus', { isLive: (accountId, keyId) => identity.isKeyLive(accountId, keyId) });
  },
  subgraph: (s) => ({
    resolvers: [IdentityResolver],
    createResolver: (cls) => new cls(s),
    referenceResolvers: {
      Project: {
        async __resolveReference(ref: { id: string }, ctx: RequestContext) {
          const project = await s.findProject(ref.id);
          if (!project || !ctx.principal || project.accountId !== ctx.principal.accountId) return null;
          return toProject(project);
        },
      },
    },
  }),
  cli: [
    {
      words: ['keys', 'create'],
      usage: '--account SLUG [--plan free|pro] [--role owner|member|read_only] [--scopes a,b] [--mode live|test]',
      options: {
        account: { type: 'string' },
        plan: { type: 'string' },
        role: { type: 'string' },
        scopes: { type: 'string' },
        mode: { type: 'string' },
      },
      required: ['account'],
      async run({ values, services }) {
        const created = await services.createApiKey({
          accountSlug: need(values.account, 'keys create needs --account SLUG'),
          plan: values.plan as Plan | undefined,
          role: values.role as Role | undefined,
          scopes: typeof values.scopes === 'string' ? values.scopes.split(',') : [],
          mode: values.mode as KeyMode | undefined,
        });
        return {
          key: created.key,
          key_id: created.keyId,
          prefix: created.prefix,
          account: created.accountSlug,
          account_id: created.accountId,
          plan: created.plan,
          role: created.role,
          scopes: created.scopes,
          mode: created.mode,
        };
      },
      describe: (r) => `key ${r.key}\n(shown once; account ${r.account}, plan ${r.plan}, role ${r.role}, ${r.mode})`,
    },
    {
      words: ['keys', 'revoke'],
      usage: '--key-id ID',
      options: { 'key-id': { type: 'string' } },
      required: ['key-id'],
      async run({ values, services }) {
        const revoked = await services.revokeApiKey(need(values['key-id'], 'keys revoke needs --key-id ID'));
        return { key_id: revoked.keyId, revoked: true, revoked_at: revoked.revokedAt };
      },
      describe: (r) => `key ${r.key_id} revoked: true (stops within 5 s, open subscriptions included)`,
    },
    {
      words: ['accounts', 'set'],
      usage: '--account SLUG [--plan free|pro] [--subscription active|paused]',
      options: { account: { type: 'string' }, plan: { type: 'string' }, subscription: { type: 'string' } },
      required: ['account'],
      async run({ values, services }) {
        const slug = need(values.account, 'accounts set needs --account SLUG');
        let account = await services.ensureAccount(slug, values.plan as Plan | undefined);
        if (values.subscription !== undefined) {
          account = await services.setSubscription(slug, values.subscription as SubscriptionState);
        }
        return { id: account._id, slug: account.slug, plan: account.plan, subscription: account.subscription ?? 'active' };
      },
      describe: (r) => `account ${r.slug}: plan ${r.plan}, subscription ${r.subscription}`,
    },
    {
      words: ['projects', 'create'],
      usage: '--account SLUG --name NAME',
      options: { account: { type: 'string' }, name: { type: 'string' } },
      required: ['account', 'name'],
      async run({ values, services }) {
        const usage = 'projects create needs --account SLUG --name NAME';
        const account = await services.ensureAccount(need(values.account, usage));
        const project = await services.createProject(account._id, need(values.name, usage));
        return { id: project._id, name: project.name, account_id: project.accountId };
      },
      describe: (r) => `project ${r.id} (${r.name})`,
    },
    {
      words: ['senders', 'verify'],
      usage: '--account SLUG --email ADDRESS',
      options: { account: { type: 'string' }, email: { type: 'string' } },
      required: ['account', 'email'],
      async run({ values, services }) {
        const usage = 'senders verify needs --account SLUG --email ADDRESS';
        const account = await services.ensureAccount(need(values.account, usage));
        const sender = await services.senders.verify(account._id, need(values.email, usage));
        return { email: sender.email, verified: sender.verified, verified_at: sender.verifiedAt, account: values.account };
      },
      describe: (r) => `sender ${r.email} verified for ${r.account}`,
    },
  ],
});
