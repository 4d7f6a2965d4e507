/**
 * The publishing area's input limits, one constant each, with no imports: the service, the
 * type-graphql inputs and the REST rows' zod schemas all read these, so they can never disagree.
 */

/** Longest site name, in characters. */
export const MAX_SITE_NAME_LENGTH = 63;
/** Longest recovery-point reason, in characters. */
export const MAX_REASON_LENGTH = 500;
/** Longest newsletter-provider sender name, in characters (one line). */
export const MAX_FROM_NAME_LENGTH = 100;
/** Longest newsletter-provider region name, in characters. */
export const MAX_REGION_LENGTH = 32;
/** Longest newsletter-provider API key, in characters. */
export const MAX_PROVIDER_API_KEY_LENGTH = 512;
/** Longest runtime version string, in characters. */
export const MAX_VERSION_LENGTH = 64;
/** Most node-selector tags on one site. */
export const MAX_NODE_SELECTOR_TAGS = 20;

/** Lifecycle actions of `POST …/actions` (the REST body's enum and the service's check). */
export const SITE_ACTIONS = ['restart', 'start', 'stop', 'retry_provisioning', 'delete'] as const;
