import { forbidden, type PlatformError } from './errors';
import type { Principal } from './principal';
import type { Scope } from './scopes';

/**
 * Who may decide an approval (spec 5.5, the owner-governance credential rules; decision 0095):
 * an `owner` key, or a key explicitly given the governance scope; and never the key that asked
 * for the action. Every decision route (the activity area's agent approvals, Assets' workflow
 * approvals) applies it, and answers `can_decide` from it for the reader.
 */
export const APPROVALS_DECIDE_SCOPE: Scope = 'approvals:decide';

/** The requester as recorded on an approval: `{type: 'api_key', id}` or `{type: 'workflow_run', id}`. */
export interface Requester {
  type: string;
  id: string | null;
}

/** The refusal for `p` deciding an action `requester` asked for, or null when `p` may decide it. */
export function decisionRefusal(p: Principal, requester: Requester | null | undefined): PlatformError | null {
  if (requester?.type === 'api_key' && requester.id !== null && requester.id === p.keyId) {
    return forbidden('approval_self_decision', 'the key that requested this action cannot decide it', {
      requested_by: { type: requester.type, id: requester.id },
    });
  }
  if (p.role !== 'owner' && !p.scopes.includes(APPROVALS_DECIDE_SCOPE)) {
    return forbidden('approval_not_permitted', `only an owner key (or one with ${APPROVALS_DECIDE_SCOPE}) can decide approvals`, {
      required_scope: APPROVALS_DECIDE_SCOPE,
    });
  }
  return null;
}

export const mayDecide = (p: Principal | null | undefined, requester: Requester | null | undefined): boolean =>
  !!p && decisionRefusal(p, requester) === null;
