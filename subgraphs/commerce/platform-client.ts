import { commerceError } from './errors';

/**
 * The e-commerce platform as the commerce area sees it. The area talks to it only through this
 * interface; `HttpCommercePlatform` speaks the stand-in's protocol (a store's admin API, its
 * storefront API, webhook subscriptions), and a real platform's adapter is one more class beside it.
 */
export interface StoreInfo {
  domain: string;
  name: string;
  /** The store's storefront API version (`YYYY-MM`), which the hosted storefront runtime must support. */
  storefrontApiVersion: string;
}

export interface CommercePlatform {
  /** The store, or null when the platform has no such store. */
  lookupStore(domain: string): Promise<StoreInfo | null>;
  /** Whether an admin (automation) token opens this store's admin API. */
  checkAdminToken(domain: string, token: string): Promise<boolean>;
  /** Whether a storefront token opens this store's storefront API. */
  checkStorefrontToken(domain: string, token: string): Promise<boolean>;
  /** Subscribes `address` to every webhook topic of the store (idempotent). */
  subscribeWebhooks(domain: string, address: string): Promise<void>;
}

/** Outbound calls to the commerce platform time out after 10 s. */
export const PLATFORM_TIMEOUT_MS = 10_000;

export const ADMIN_TOKEN_HEADER = 'x-commerce-access-token';
export const STOREFRONT_TOKEN_HEADER = 'x-commerce-storefront-access-token';
/** The platform's own app credential (what the commerce platform knows the hosting app by). */
export const APP_KEY_HEADER = 'x-commerce-app-key';

/** The stand-in's protocol over HTTP (a store's admin and storefront APIs under `/stores/{domain}`). */
export class HttpCommercePlatform implements CommercePlatform {
  constructor(
    private readonly baseUrl: () => string,
    private readonly appKey: string,
  ) {}

  private async call(path: string, init: RequestInit = {}): Promise<Response> {
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl().replace(/\/$/, '')}${path}`, {
        ...init,
        redirect: 'error',
        signal: AbortSignal.timeout(PLATFORM_TIMEOUT_MS),
      });
    } catch {
      // Unreachable or timed out: a worker may try again.
      throw commerceError('COMMERCE_OPERATION_FAILED', 'the commerce platform did not answer', {}, true);
    }
    if (res.status === 429) {
      await res.body?.cancel();
      throw commerceError(
        'COMMERCE_RATE_LIMITED',
        'the commerce platform is rate limiting requests; try again later',
        { retry_after_seconds: Number(res.headers.get('retry-after') ?? 1) || 1 },
        true,
      );
    }
    if (res.status >= 500) {
      await res.body?.cancel();
      throw commerceError('COMMERCE_OPERATION_FAILED', `the commerce platform answered ${res.status}`, {}, true);
    }
    return res;
  }

  private store(domain: string): string {
    return `/stores/${encodeURIComponent(domain)}`;
  }

  async lookupStore(domain: string): Promise<StoreInfo | null> {
    const res = await this.call(`${this.store(domain)}/meta.json`);
    if (res.status === 404) {
      await res.body?.cancel();
      return null;
    }
    if (!res.ok) throw commerceError('COMMERCE_OPERATION_FAILED', `store lookup answered ${res.status}`);
    const body = (await res.json()) as { domain: string; name: string; storefront_api_version?: string };
    return { domain: body.domain, name: body.name, storefrontApiVersion: body.storefront_api_version ?? '' };
  }

  async checkAdminToken(domain: string, token: string): Promise<boolean> {
    const res = await this.call(`${this.store(domain)}/admin/api/shop.json`, { headers: { [ADMIN_TOKEN_HEADER]: token } });
    await res.body?.cancel();
    return res.ok;
  }

  async checkStorefrontToken(domain: string, token: string): Promise<boolean> {
    const res = await this.call(`${this.store(domain)}/api/graphql`, {
      method: 'POST',
      headers: { [STOREFRONT_TOKEN_HEADER]: token, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ shop { name } }' }),
    });
    if (!res.ok) {
      await res.body?.cancel();
      return false;
    }
    const body = (await res.json()) as { data?: { shop?: { name?: string } } };
    return Boolean(body.data?.shop?.name);
  }

  async subscribeWebhooks(domain: string, address: string): Promise<void> {
    const res = await this.call(`${this.store(domain)}/admin/api/webhooks.json`, {
      method: 'POST',
      headers: { [APP_KEY_HEADER]: this.appKey, 'content-type': 'application/json' },
      body: JSON.stringify({ webhook: { address, topic: '*' } }),
    });
    await res.body?.cancel();
    if (res.status === 404)
      throw commerceError('COMMERCE_INVALID_CONFIGURATION', 'the store does not exist on the commerce platform');
    if (!res.ok) throw commerceError('COMMERCE_OPERATION_FAILED', `webhook subscription answered ${res.status}`);
  }
}
