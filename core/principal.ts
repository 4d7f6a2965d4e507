import { createHmac, timingSafeEqual } from 'node:crypto';
import { config } from './config';
import { forbidden, unauthenticated } from './errors';
import { effectiveScopes, scopesOfRole, type Role } from './scopes';

/** A key's role; declared with the scopes each role may hold (core/scopes.ts). */
export type { Role };
export type Plan = 'free' | 'pro';
/** docs/contracts.md `keys create --mode live|test` (default `live`). */
export type KeyMode = 'live' | 'test';
export const KEY_MODES: readonly KeyMode[] = ['live', 'test'];

/** Who is calling: resolved from the bearer key at the edge, carried to subgraphs signed. */
export interface Principal {
  accountId: string;
  accountSlug: string;
  plan: Plan;
  keyId: string;
  role: Role;
  scopes: string[];
  /** `test` keys act on the same account but never reach outside systems (mail is recorded, not sent). */
  mode?: KeyMode;
}

/** Header that carries the signed principal from the router (or bridge) to subgraphs. */
export const PRINCIPAL_HEADER = 'x-platform-principal';
/**
 * A signed principal is accepted for 30 s after signing: the router signs one per subgraph fetch,
 * right before sending it, so anything older is a replay. A header from the future is refused
 * beyond a small skew between the clocks of two hosts.
 */
export const PRINCIPAL_MAX_AGE_MS = 30_000;
export const PRINCIPAL_MAX_FUTURE_SKEW_MS = 5_000;

/**
 * What a signature is bound to besides the principal: the subgraph it is sent to (a header
 * captured on its way to one subgraph is refused by every other) and the request id it travels
 * with (a header cannot be lifted onto another request's id).
 */
export interface PrincipalBinding {
  audience: string;
  requestId: string;
}

interface SignedPayload {
  p: Principal | null;
  iat: number;
  aud: string;
  rid: string;
  /** The caller's address as the edge saw it (the socket, or a trusted proxy's X-Forwarded-For). */
  ip?: string;
}

function sign(payload: string, key: string): string {
  return createHmac('sha256', key).update(payload).digest('base64url');
}

/** `<base64url(json)>.<hmac>`; `null` principal means an anonymous caller. */
export function signPrincipal(
  principal: Principal | null,
  binding: PrincipalBinding & { clientIp?: string },
  key = config().INTERNAL_SIGNING_KEY,
): string {
  const body: SignedPayload = { p: principal, iat: Date.now(), aud: binding.audience, rid: binding.requestId };
  if (binding.clientIp) body.ip = binding.clientIp;
  const payload = Buffer.from(JSON.stringify(body)).toString('base64url');
  return `${payload}.${sign(payload, key)}`;
}

export class ForgedPrincipalError extends Error {}

/**
 * Verifies a principal header for one subgraph and request. Throws ForgedPrincipalError when it is
 * missing, malformed, too old or from the future, meant for another subgraph or request, or its
 * signature does not match: subgraphs refuse such requests outright.
 */
export function verifyPrincipal(
  header: string | undefined,
  binding: PrincipalBinding,
  key = config().INTERNAL_SIGNING_KEY,
): Principal | null {
  return verifySigned(header, binding, key).principal;
}

/** verifyPrincipal with the caller's address the edge signed alongside (undefined when none was). */
export function verifySigned(
  header: string | undefined,
  binding: PrincipalBinding,
  key = config().INTERNAL_SIGNING_KEY,
): { principal: Principal | null; clientIp?: string } {
  if (!header) throw new ForgedPrincipalError('missing principal header');
  const dot = header.indexOf('.');
  if (dot <= 0) throw new ForgedPrincipalError('malformed principal header');
  const payload = header.slice(0, dot);
  const given = Buffer.from(header.slice(dot + 1));
  const expected = Buffer.from(sign(payload, key));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new ForgedPrincipalError('principal signature mismatch');
  }
  let decoded: SignedPayload;
  try {
    decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw new ForgedPrincipalError('malformed principal payload');
  }
  const age = Date.now() - decoded.iat;
  if (typeof decoded.iat !== 'number' || age > PRINCIPAL_MAX_AGE_MS) throw new ForgedPrincipalError('principal header expired');
  if (age < -PRINCIPAL_MAX_FUTURE_SKEW_MS) throw new ForgedPrincipalError('principal header signed in the future');
  if (decoded.aud !== binding.audience) throw new ForgedPrincipalError('principal header is meant for another subgraph');
  if (decoded.rid !== binding.requestId) throw new ForgedPrincipalError('principal header belongs to another request');
  return { principal: decoded.p, clientIp: typeof decoded.ip === 'string' ? decoded.ip : undefined };
}

export const canWrite = (p: Principal): boolean => p.role === 'owner' || p.role === 'member';

/** The caller, or a 401 when the request carried no valid key. */
export function requirePrincipal(principal: Principal | null | undefined): Principal {
  if (!principal) throw unauthenticated();
  return principal;
}

/** The caller, who must be allowed to change things (owner or member), else 403 `read_only_key`. */
export function requireWriter(principal: Principal | null | undefined): Principal {
  const p = requirePrincipal(principal);
  if (!canWrite(p)) throw forbidden('read_only_key', 'this key is read-only and cannot change anything');
  return p;
}

/**
 * The caller, whose key must carry `scope` (e.g. `assets:write`), else 403 `insufficient_scope`.
 * A key created without `--scopes` carries every scope its role allows.
 */
export function requireScope(principal: Principal | null | undefined, scope: string): Principal {
  const p = requirePrincipal(principal);
  // Keys stored before scopes were recorded carry none: they keep every scope of their role.
  // A scope no read-only key can hold: the role is the reason, say so (403 `read_only_key`).
  if (!scopesOfRole(p.role).includes(scope as never) && !canWrite(p)) requireWriter(p);
  if (!effectiveScopes(p.role, p.scopes).includes(scope)) {
    throw forbidden('insufficient_scope', `this key lacks the ${scope} scope`, { required_scope: scope });
  }
  return p;
}
