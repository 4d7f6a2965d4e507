import { decryptSecret } from '../../core/secrets';
import { secretAad } from './connections';
import type { ConnectionKind } from './limits';
import type { EnvironmentDoc, EnvironmentPin } from './model';

/**
 * What a release pins of its environment (docs/decisions/0130-commerce-runtime.md): the revision,
 * the non-secret fields and the sealed secrets as they were when the release was created. The
 * secrets stay sealed for the environment record they belong to; they are opened only to build the
 * process environment, which is never part of an API answer.
 */
export function pinEnvironment(doc: EnvironmentDoc | null): EnvironmentPin | null {
  return doc ? { environmentId: doc._id, revision: doc.revision, fields: { ...doc.fields }, secrets: { ...doc.secrets } } : null;
}

/** The storefront framework's and the app template's names (docs/contracts.md, "The data plane") for a pinned environment. */
export function processEnv(kind: ConnectionKind, storeDomain: string, pin: EnvironmentPin | null): Record<string, string> {
  const field = (n: string) => pin?.fields[n] ?? null;
  const secret = (n: string) => (pin?.secrets[n] ? decryptSecret(pin.secrets[n], secretAad(pin.environmentId, n)) : null);
  const entries: Array<[string, string | null]> =
    kind === 'storefront'
      ? [
          ['PUBLIC_STORE_DOMAIN', storeDomain],
          ['PUBLIC_STOREFRONT_API_TOKEN', secret('public_storefront_token')],
          ['PRIVATE_STOREFRONT_API_TOKEN', secret('private_storefront_token')],
          ['PUBLIC_STOREFRONT_ID', field('storefront_id')],
          ['PUBLIC_CUSTOMER_ACCOUNT_API_CLIENT_ID', field('customer_account_client_id')],
          ['PUBLIC_CUSTOMER_ACCOUNT_API_URL', field('customer_account_url')],
          ['SESSION_SECRET', secret('session_secret')],
        ]
      : [
          ['SHOPIFY_API_KEY', field('client_id')],
          ['SHOPIFY_API_SECRET', secret('client_secret')],
          ['SCOPES', field('scopes')],
          ['SHOPIFY_APP_URL', field('app_url')],
        ];
  return Object.fromEntries(entries.filter((e): e is [string, string] => typeof e[1] === 'string' && e[1] !== ''));
}
