import type { FastifyReply, FastifyRequest, FastifyInstance } from 'fastify';
import type { Principal } from './principal';

/** Requests per minute per API key (or per client address without one), on the bridge and on the router. */
export const DEFAULT_RATE_LIMIT_PER_MINUTE = 600;
/**
 * Failed authentications (a credential that is not a valid key) per minute per client address. Once
 * spent, the address's requests with a credential answer 429 before any key lookup, so unknown keys
 * cost at most this many database lookups per address and minute.
 */
export const DEFAULT_AUTH_FAILURES_PER_MINUTE = 30;
/** Buckets remembered at most; beyond it the least recently used is forgotten (a full bucket again). */
const MAX_BUCKETS = 100_000;

/**
 * A token bucket per caller: `perMinute` requests may come in a burst, and the bucket refills
 * evenly over the minute. In memory, per process: each bridge or router instance counts its own.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(readonly perMinute: number = DEFAULT_RATE_LIMIT_PER_MINUTE) {}

  /** Whether `id`'s bucket holds a request, without taking it. */
  peek(id: string, now = Date.now()): { ok: true } | { ok: false; retryAfterS: number } {
    const tokens = this.tokensOf(id, now);
    return tokens < 1 ? { ok: false, retryAfterS: this.retryAfter(tokens) } : { ok: true };
  }

  private tokensOf(id: string, now: number): number {
    const prior = this.buckets.get(id);
    return prior ? Math.min(this.perMinute, prior.tokens + (now - prior.at) * (this.perMinute / 60_000)) : this.perMinute;
  }

  private retryAfter(tokens: number): number {
    return Math.max(1, Math.ceil((1 - tokens) / (this.perMinute / 60_000) / 1000));
  }

  /** Takes one request from `id`'s bucket; when empty, how many seconds until one is back. */
  take(id: string, now = Date.now()): { ok: true } | { ok: false; retryAfterS: number } {
    const tokens = this.tokensOf(id, now);
    this.buckets.delete(id); // re-inserted below: Map order is the LRU order
    if (tokens < 1) {
      this.buckets.set(id, { tokens, at: now });
      return { ok: false, retryAfterS: this.retryAfter(tokens) };
    }
    this.buckets.set(id, { tokens: tokens - 1, at: now });
    if (this.buckets.size > MAX_BUCKETS) this.buckets.delete(this.buckets.keys().next().value as string);
    return { ok: true };
  }
}

/** Parses `Authorization: Bearer <key>` (scheme in any case, any spacing); anything else is no key. */
export function bearerToken(authorization: string | undefined): string | undefined {
  const m = /^\s*Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  return m?.[1];
}

/**
 * Who a request is, decided once at the edge (bridge and router): `principal` for a valid key,
 * `null` for none or an invalid one, `undefined` when the key could not be checked (engine down;
 * the request goes on and the subgraph decides).
 */
export interface EdgeCaller {
  principal: Principal | null | undefined;
  /** Why the key could not be checked (an engine down): the server answers it (503) without asking again. */
  error?: unknown;
}

export type RefusalReason = 'rate_limited' | 'auth_failures';
export type Admission = ({ ok: true } | { ok: false; retryAfterS: number; reason: RefusalReason }) & EdgeCaller;

/**
 * The edge's rate limits: a request is counted against its key id once the key is parsed and
 * checked (so `Bearer  KEY` and `bearer KEY` share one bucket), else against its client address;
 * failed authentications are also counted per client address and, once spent, refused before the
 * key lookup.
 */
export class EdgeLimits {
  readonly requests: RateLimiter;
  readonly failures: RateLimiter;

  constructor(
    private readonly authenticate: (token: string) => Promise<Principal | null>,
    opts: { perMinute?: number; authFailuresPerMinute?: number } = {},
  ) {
    this.requests = new RateLimiter(opts.perMinute);
    this.failures = new RateLimiter(opts.authFailuresPerMinute ?? DEFAULT_AUTH_FAILURES_PER_MINUTE);
  }

  async admit(authorization: string | undefined, ip: string): Promise<Admission> {
    let principal: Principal | null | undefined = null;
    let error: unknown;
    if (typeof authorization === 'string' && authorization.trim() !== '') {
      const spent = this.failures.peek(ip);
      if (!spent.ok) return { ok: false, retryAfterS: spent.retryAfterS, reason: 'auth_failures', principal: null };
      const token = bearerToken(authorization);
      try {
        principal = token ? await this.authenticate(token) : null;
      } catch (e) {
        principal = undefined; // not a failure of the caller
        error = e;
      }
      if (principal === null) this.failures.take(ip);
    }
    const taken = this.requests.take(principal ? `k:${principal.keyId}` : `ip:${ip}`);
    return taken.ok
      ? { ok: true, principal, error }
      : { ok: false, retryAfterS: taken.retryAfterS, reason: 'rate_limited', principal, error };
  }
}

export const rateLimitedError = (retryAfterS: number) => ({
  code: 'rate_limited',
  message: 'too many requests for this key; retry after the time in Retry-After',
  details: { retry_after_s: retryAfterS },
});

export const authFailuresError = (retryAfterS: number) => ({
  code: 'rate_limited',
  message: 'too many failed authentications from this address; retry after the time in Retry-After',
  details: { retry_after_s: retryAfterS },
});

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller the edge identified (see EdgeCaller); unset on health probes. */
    caller?: EdgeCaller;
  }
}

/**
 * Identifies every request but health probes (`req.caller`) and counts it against its caller;
 * over a limit, `reject` answers (429 with Retry-After, in the server's own envelope).
 */
export function installRateLimit(
  app: FastifyInstance,
  limits: EdgeLimits,
  reject: (req: FastifyRequest, reply: FastifyReply, retryAfterS: number, reason: RefusalReason) => unknown,
): void {
  app.addHook('onRequest', async (req, reply) => {
    const path = req.url.split('?')[0];
    if (path === '/healthz' || path === '/readyz') return;
    const taken = await limits.admit(req.headers.authorization, req.ip);
    req.caller = { principal: taken.principal, error: taken.error };
    if (!taken.ok) {
      reply.header('retry-after', String(taken.retryAfterS));
      await reject(req, reply, taken.retryAfterS, taken.reason);
      return reply;
    }
  });
}
