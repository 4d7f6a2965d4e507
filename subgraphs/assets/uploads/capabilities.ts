import { createHmac, timingSafeEqual } from 'node:crypto';
import { badRequest } from '../../../core/errors';
import type { Principal } from '../../../core/principal';
import type { AssetAccess } from './asset-access';

/** Browser upload capabilities (spec 5.7): 10 minutes by default, at most one hour. */
export const CAPABILITY_DEFAULT_SECONDS = 600;
export const CAPABILITY_MAX_SECONDS = 3600;

interface CapabilityClaims {
  /** account, key, plan of the key that asked for it */
  a: string;
  k: string;
  p: 'free' | 'pro';
  /** bucket and folder the uploads go to (absent: the defaults) */
  b?: string;
  f?: string;
  exp: number;
}

/**
 * A short-lived, stateless token that lets a browser upload into one account (and optionally one
 * bucket and folder) through `{base_url}/assets/widget` without the API key: HMAC-signed claims.
 */
export class UploadCapabilities {
  constructor(private readonly assets: AssetAccess) {}

  private sign(body: string): string {
    return createHmac('sha256', this.assets.cfg.INTERNAL_SIGNING_KEY).update(`assets-capability:${body}`).digest('base64url');
  }

  async issue(
    p: Principal | null,
    opts: { bucket?: string | null; folder?: string | null; expiresIn?: number | null },
  ): Promise<{ token: string; expiresAt: Date; uploadUrl: string }> {
    const caller = this.assets.writer(p);
    const seconds = opts.expiresIn ?? CAPABILITY_DEFAULT_SECONDS;
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > CAPABILITY_MAX_SECONDS) {
      throw badRequest('validation_failed', `expires_in must be 1 to ${CAPABILITY_MAX_SECONDS} seconds`);
    }
    if (opts.bucket) await this.assets.buckets.get(caller.accountId, opts.bucket);
    const exp = Date.now() + seconds * 1000;
    const claims: CapabilityClaims = { a: caller.accountId, k: caller.keyId, p: caller.plan, exp };
    if (opts.bucket) claims.b = opts.bucket;
    if (opts.folder) claims.f = opts.folder;
    const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
    return {
      token: `${body}.${this.sign(body)}`,
      expiresAt: new Date(exp),
      uploadUrl: `${this.assets.cfg.baseUrl}/assets/widget`,
    };
  }

  /**
   * The uploader a valid, unexpired token stands for (with only `assets:write`), or null — also
   * when the key it was issued to has been revoked since (decision 0099).
   */
  async verifyLive(token: string | undefined): Promise<{ principal: Principal; bucket?: string; folder?: string } | null> {
    const cap = this.verify(token);
    if (!cap || !(await this.assets.keyLive(cap.principal.accountId, cap.principal.keyId))) return null;
    return cap;
  }

  /** The token's signature and expiry only (see verifyLive). */
  verify(token: string | undefined): { principal: Principal; bucket?: string; folder?: string } | null {
    if (!token) return null;
    const [body, mac] = token.split('.');
    if (!body || !mac) return null;
    const expected = Buffer.from(this.sign(body));
    if (mac.length !== expected.length || !timingSafeEqual(Buffer.from(mac), expected)) return null;
    const c = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as CapabilityClaims;
    if (c.exp <= Date.now()) return null;
    return {
      principal: { accountId: c.a, accountSlug: '', plan: c.p, keyId: c.k, role: 'member', scopes: ['assets:write'] },
      bucket: c.b,
      folder: c.f,
    };
  }
}
