/**
 * Commerce limits and fixed names from the spec (2.2, 3.2, 4.2, 7.2, 8). Dependency-free, so the
 * route rows, the type classes and the services read the same constants.
 */

/** Spec 8: a JSON request body is at most 64 KiB. */
export const COMMERCE_BODY_LIMIT = 64 * 1024;

export const COMMERCE_PREFIX = '/api/v1/projects/{projectID}/commerce';

export const CONNECTION_KINDS = ['app', 'storefront'] as const;
export type ConnectionKind = (typeof CONNECTION_KINDS)[number];

/** Spec 3.2: connection and verification states. */
export const CONNECTION_STATES = ['pending', 'ready', 'invalid', 'disabled'] as const;
export type ConnectionState = (typeof CONNECTION_STATES)[number];

/** Spec 3.2: release states. */
export const RELEASE_STATUSES = ['queued', 'running', 'healthy', 'failed', 'degraded', 'cancelled'] as const;
export type ReleaseStatus = (typeof RELEASE_STATUSES)[number];
/** Only these may be retried (spec 4.2 "guarded retry"). */
export const RETRYABLE_RELEASE_STATUSES: readonly ReleaseStatus[] = ['failed', 'degraded'];

/** Spec 2.2: `preview` is for storefronts only. */
export const ENVIRONMENTS = ['development', 'production', 'preview'] as const;
export type EnvironmentName = (typeof ENVIRONMENTS)[number];
export const APP_ENVIRONMENTS: readonly EnvironmentName[] = ['development', 'production'];

/** Spec 8: analytics ranges; omitted or unknown behaves as `7d`. */
export const ANALYTICS_RANGES = ['1h', '24h', '7d', '30d'] as const;
export type AnalyticsRange = (typeof ANALYTICS_RANGES)[number];
export const DEFAULT_ANALYTICS_RANGE: AnalyticsRange = '7d';

/** Lengths of the free-text fields of environments and connections. */
export const MAX_FIELD_LENGTH = 2048;
export const MAX_SECRET_LENGTH = 4096;
export const MAX_DOMAIN_LENGTH = 253;
export const MAX_BRANCH_LENGTH = 255;

/**
 * A release's memory limit, set per environment as `memory_mb` (docs/decisions/0273-tenant-sandbox.md):
 * at least this many MiB, and at most its plan's maximum (`COMMERCE_MEMORY_MAX_MB_{FREE,PRO}` override
 * the defaults below). Unset, a release gets the data plane's default (`DEFAULT_RELEASE_MEMORY_MB`, 512).
 */
export const MIN_RELEASE_MEMORY_MB = 128;
export const DEFAULT_MEMORY_MAX_MB: Readonly<Record<'free' | 'pro', number>> = { free: 512, pro: 1024 };

/** Oldest storefront API version (`YYYY-MM`) the hosted storefront runtime supports. */
export const MIN_STOREFRONT_API_VERSION = '2024-01';

/** Lists: default and largest page. */
export const DEFAULT_PAGE = 25;
export const MAX_PAGE = 100;
