import { isUuid } from '../../core/ids';
import type { Plan } from '../../core/principal';
import { commerceError, invalidConfiguration } from './errors';
import {
  APP_ENVIRONMENTS,
  type ConnectionKind,
  type EnvironmentName,
  MAX_FIELD_LENGTH,
  MAX_SECRET_LENGTH,
  MIN_RELEASE_MEMORY_MB,
} from './limits';

/**
 * The environment bodies of spec 2.2, by connection kind. Secrets are write-only: they are sealed
 * on write, never read back, and shown only as `has_<name>`. A credential is a secret or one of the
 * identifiers the secrets belong to; changing any of them invalidates the verification.
 */
export const APP_FIELDS = ['config_path', 'config_name', 'app_url', 'client_id', 'scopes'] as const;
export const APP_SECRETS = ['client_secret', 'automation_token'] as const;
export const STOREFRONT_FIELDS = ['app_url', 'storefront_id', 'customer_account_client_id', 'customer_account_url'] as const;
/** `session_secret` is not in the body table of 2.2 but its `has_session_secret` is, so it is accepted. */
export const STOREFRONT_SECRETS = [
  'public_storefront_token',
  'private_storefront_token',
  'customer_account_secret',
  'session_secret',
] as const;
/** Every `has_*` flag of spec 2.2, in its order. */
export const ALL_SECRETS = [
  'client_secret',
  'automation_token',
  'public_storefront_token',
  'private_storefront_token',
  'customer_account_secret',
  'session_secret',
] as const;
export type SecretName = (typeof ALL_SECRETS)[number];
const CREDENTIAL_IDS = new Set(['client_id', 'storefront_id', 'customer_account_client_id']);

/** Not a credential nor a framework value: the memory limit of the environment's releases, in MiB. */
export const MEMORY_FIELD = 'memory_mb';

/** The body as the service receives it: REST names, `undefined` when omitted (`memory_mb` a number). */
export type EnvironmentBody = Partial<Record<string, string | number | null>>;

/** The largest `memory_mb` the caller's plan allows (`CommerceService.memoryMax`). */
export interface MemoryMax {
  plan: Plan;
  maxMb: number;
}

/** The plan's refusal of a memory limit (422 `COMMERCE_MEMORY_LIMIT_EXCEEDS_PLAN`), the allowed maximum in `details`. */
export function memoryOverPlan(max: MemoryMax, details: Record<string, unknown> = {}) {
  return commerceError(
    'COMMERCE_MEMORY_LIMIT_EXCEEDS_PLAN',
    `memory_mb is over the ${max.plan} plan's maximum of ${max.maxMb} MiB`,
    { field: MEMORY_FIELD, ...details, plan: max.plan, max_memory_mb: max.maxMb },
  );
}

/**
 * `memory_mb` (docs/decisions/0273-tenant-sandbox.md): omitted or null is the default; else an
 * integer of at least `MIN_RELEASE_MEMORY_MB` (422 `COMMERCE_INVALID_CONFIGURATION`) and at most the
 * plan's maximum (422 `COMMERCE_MEMORY_LIMIT_EXCEEDS_PLAN`).
 */
export function checkMemoryMb(v: unknown, max: MemoryMax): number | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isInteger(v)) {
    throw invalidConfiguration('memory_mb must be a whole number of MiB', { field: MEMORY_FIELD });
  }
  if (v < MIN_RELEASE_MEMORY_MB) {
    throw invalidConfiguration(`memory_mb must be at least ${MIN_RELEASE_MEMORY_MB}`, {
      field: MEMORY_FIELD,
      min_memory_mb: MIN_RELEASE_MEMORY_MB,
    });
  }
  if (v > max.maxMb) throw memoryOverPlan(max);
  return v;
}

const SCOPES = /^[a-z_]+(?:,[a-z_]+)*$/;
const CONFIG_PATH = /^(?!\/)(?!.*\.\.)[A-Za-z0-9._/-]+\.toml$/;

function httpsOrigin(field: string, v: string): string {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw invalidConfiguration(`${field} must be an HTTPS origin`, { field });
  }
  if (u.protocol !== 'https:' || u.username || u.password || u.search || u.hash || (u.pathname !== '/' && u.pathname !== '')) {
    throw invalidConfiguration(`${field} must be an HTTPS origin (https://host[:port], no path)`, { field });
  }
  return u.origin;
}

function httpsUrl(field: string, v: string): string {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw invalidConfiguration(`${field} must be an HTTPS URL`, { field });
  }
  if (u.protocol !== 'https:' || u.username || u.password) throw invalidConfiguration(`${field} must be an HTTPS URL`, { field });
  return u.toString();
}

/** Checks one non-secret field and returns its stored form. */
function checkField(name: string, v: string): string {
  if (v.length > MAX_FIELD_LENGTH) throw invalidConfiguration(`${name} is too long`, { field: name });
  switch (name) {
    case 'app_url':
      return httpsOrigin(name, v);
    case 'customer_account_url':
      return httpsUrl(name, v);
    case 'storefront_id':
    case 'customer_account_client_id':
      if (!isUuid(v)) throw invalidConfiguration(`${name} must be a UUID`, { field: name });
      return v.toLowerCase();
    case 'scopes': {
      const list = v
        .split(',')
        .map((s) => s.trim())
        .join(',');
      if (!SCOPES.test(list)) {
        throw invalidConfiguration('scopes must be a comma-separated list such as read_products,write_orders', { field: name });
      }
      return list;
    }
    case 'config_path':
      if (!CONFIG_PATH.test(v))
        throw invalidConfiguration('config_path must be a relative path to a .toml file', { field: name });
      return v;
    default:
      if (!v.trim()) throw invalidConfiguration(`${name} must not be empty`, { field: name });
      return v;
  }
}

export interface CheckedEnvironment {
  fields: Record<string, string | null>;
  /** `memory_mb`; null: the default. */
  memoryMb: number | null;
  /** Secrets given (non-empty) in this request, in clear: the caller seals them at once. */
  secrets: Partial<Record<SecretName, string>>;
}

/**
 * Spec 2.2 and 7.2: which environment a kind has, which fields it takes, their formats. Any
 * violation is 422 `COMMERCE_INVALID_CONFIGURATION`, naming the field but never echoing a value.
 */
export function checkEnvironment(
  kind: ConnectionKind,
  env: EnvironmentName,
  body: EnvironmentBody,
  memory: MemoryMax,
): CheckedEnvironment {
  if (kind === 'app' && !APP_ENVIRONMENTS.includes(env)) {
    throw invalidConfiguration('preview is an environment of storefronts only', { environment: env });
  }
  const fields: readonly string[] = kind === 'app' ? APP_FIELDS : STOREFRONT_FIELDS;
  const secrets: readonly string[] = kind === 'app' ? APP_SECRETS : STOREFRONT_SECRETS;
  const foreign = Object.keys(body).filter(
    (k) => body[k] !== undefined && k !== MEMORY_FIELD && !fields.includes(k) && !secrets.includes(k),
  );
  if (foreign.length > 0) {
    throw invalidConfiguration(`fields not used by a ${kind} environment: ${foreign.join(', ')}`, { fields: foreign, kind });
  }
  const out: CheckedEnvironment = { fields: {}, memoryMb: null, secrets: {} };
  for (const f of fields) {
    const v = body[f];
    if (typeof v === 'number') throw invalidConfiguration(`${f} must be a string`, { field: f });
    out.fields[f] = v === undefined || v === null || v === '' ? null : checkField(f, v);
  }
  out.memoryMb = checkMemoryMb(body[MEMORY_FIELD], memory);
  for (const s of secrets) {
    const v = body[s];
    // Omitted or empty keeps the stored value (spec 2.2, secret handling 3).
    if (typeof v !== 'string' || v === '') continue;
    if (v.length > MAX_SECRET_LENGTH || /[\s]/.test(v)) throw invalidConfiguration(`${s} is malformed`, { field: s });
    out.secrets[s as SecretName] = v;
  }
  return out;
}

/** Whether the identifiers a credential belongs to changed between two field sets. */
export function credentialIdsChanged(before: Record<string, string | null>, after: Record<string, string | null>): boolean {
  return [...CREDENTIAL_IDS].some((k) => (before[k] ?? null) !== (after[k] ?? null));
}
