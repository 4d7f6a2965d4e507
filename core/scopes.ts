/** A key's role (a principal's `role`): what it may hold is `scopesOfRole`. */
export type Role = 'owner' | 'member' | 'read_only';

/**
 * Every scope a key can carry, by area (spec 5.2 names the Assets ones; the others are this
 * platform's choice, recorded in docs/spec-decisions.md). `<area>:read` covers queries,
 * `<area>:write` covers changes. The object-store subscriptions act on Assets' buckets and use the
 * Assets scopes.
 */
export const SCOPE_CATALOGUE = {
  identity: ['identity:read', 'identity:write'],
  publisher: ['publisher:read', 'publisher:write'],
  assets: ['assets:read', 'assets:write', 'assets:process', 'assets:generate', 'assets:publish', 'assets:admin'],
  mail: ['mail:read', 'mail:write'],
  commerce: ['commerce:read', 'commerce:write'],
  billing: ['billing:read', 'billing:write'],
  activity: ['activity:read', 'activity:write'],
  /** Deciding a governed agent action (spec 5.5); owners decide without it (docs/decisions/0095). */
  approvals: ['approvals:decide'],
} as const;

/** Scopes a member key holds only when they are named at creation: never part of its defaults. */
export const GRANTED_ONLY_SCOPES: readonly string[] = ['approvals:decide'];

export const PUBLISHER_SCOPES = { read: 'publisher:read', write: 'publisher:write' } as const;
export const IDENTITY_SCOPES = { read: 'identity:read', write: 'identity:write' } as const;

export type Scope = (typeof SCOPE_CATALOGUE)[keyof typeof SCOPE_CATALOGUE][number];

export const ALL_SCOPES: readonly Scope[] = Object.values(SCOPE_CATALOGUE).flat();

export const isScope = (s: string): s is Scope => (ALL_SCOPES as readonly string[]).includes(s);

/**
 * What a role may hold: owners and members every scope (what a member may not do is decided by
 * the role checks, not by scopes); read-only keys the `:read` scopes.
 */
export function scopesOfRole(role: Role): Scope[] {
  if (role === 'read_only') return ALL_SCOPES.filter((s) => s.endsWith(':read'));
  return [...ALL_SCOPES];
}

/** The scopes a key of this role gets when none are named: what it may hold, less the granted-only ones for members. */
export function defaultScopesOfRole(role: Role): Scope[] {
  const may = scopesOfRole(role);
  return role === 'owner' ? may : may.filter((s) => !GRANTED_ONLY_SCOPES.includes(s));
}

/** The scopes a principal effectively has: keys stored before scopes were recorded (none) keep their role's defaults. */
export const effectiveScopes = (role: Role, stored: readonly string[]): string[] =>
  stored.length > 0 ? [...stored] : defaultScopesOfRole(role);

/** An area's two default scopes: a query (or a field it adds to another area's type) needs `read`, a mutation `write`. */
export interface AreaScopes {
  read: string;
  write: string;
}

/**
 * The default scopes of an area by its registry name: `<area>:read` / `<area>:write` for the areas
 * of SCOPE_CATALOGUE; the object store acts on Assets' buckets and uses the Assets scopes. An area
 * with neither has no default, and each of its root fields must declare a scope (or the build fails).
 */
export function areaScopes(area: string): AreaScopes | undefined {
  if (area === 'objstore') return { read: 'assets:read', write: 'assets:write' };
  if (area in SCOPE_CATALOGUE) return { read: `${area}:read`, write: `${area}:write` };
  return undefined;
}
