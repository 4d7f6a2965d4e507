import type { AccountStanding } from '../../core/account-standing';
import { isUuid } from '../../core/ids';
import type { Ports } from '../../core/ports';
import { canWrite, type Principal } from '../../core/principal';
import { effectiveScopes } from '../../core/scopes';
import { commerceError, commerceNotFound } from './errors';

/**
 * Who may use a commerce route (spec 5.4), checked in this order: a key (401) → the feature on
 * (404 `COMMERCE_DISABLED`) → the project visible to the key (404 `COMMERCE_NOT_FOUND`, never 403:
 * existence is concealed) → an active, non-paused subscription (402) → a writer for changes (403) → the key's
 * `commerce:read` / `commerce:write` scope (403, in commerce's own envelope).
 */
export class CommerceAccess {
  constructor(
    private readonly ports: Ports,
    private readonly enabled: () => boolean,
  ) {}

  async check(principal: Principal | null | undefined, projectId: string, write: boolean): Promise<Principal> {
    if (!principal) throw commerceError('COMMERCE_UNAUTHENTICATED', 'bearer token missing or invalid');
    if (!this.enabled()) throw commerceError('COMMERCE_DISABLED', 'commerce hosting is not enabled in this environment');
    if (!isUuid(projectId) || !(await this.ports.get('projects').canAccessProject(principal, projectId))) {
      throw commerceNotFound('project');
    }
    const standing: AccountStanding = this.ports.get('accountStanding');
    const state = await standing.subscriptionOf(principal.accountId);
    if (state !== 'active') {
      throw commerceError(
        'COMMERCE_SUBSCRIPTION_INACTIVE',
        `commerce hosting needs an active subscription (this one is ${state})`,
        {
          subscription: state,
        },
      );
    }
    if (write && !canWrite(principal))
      throw commerceError('COMMERCE_FORBIDDEN', 'this key is read-only and cannot change anything');
    const scope = write ? 'commerce:write' : 'commerce:read';
    if (!effectiveScopes(principal.role, principal.scopes).includes(scope)) {
      throw commerceError('COMMERCE_FORBIDDEN', `this key lacks the ${scope} scope`, { required_scope: scope });
    }
    return principal;
  }
}
