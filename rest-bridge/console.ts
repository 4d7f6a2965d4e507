import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CONSOLE_SESSION_COOKIE, type ConsoleSessions, sessionIdOf } from '../core/console-sessions';
import { isPlatformError } from '../core/errors';
import type { Principal } from '../core/principal';
import { authFailuresError, type EdgeLimits } from '../core/rate-limit';
import { GRAPHQL_BODY_LIMIT } from '../core/subgraph-server';
import type { GraphQLExecutor } from '../contract/graphql-executor';
import type { BridgeError } from './envelopes';
import { successEnvelope } from './envelopes';
import { attachConsoleSocket, type ConsoleSockets } from './console-socket';
import { registerConsoleStatic } from './console-static';
import type { ConsoleOptions } from './console-options';
import { requestSite } from './same-origin';

/**
 * The console's server side on the bridge (docs/decisions/0280-console-sessions.md): the session
 * routes, the cookie that stands for a key on every route, the same-origin rule, GraphQL over HTTP
 * and graphql-ws for the single-page app, and its files. The session rules live in the kernel
 * (core/console-sessions.ts); this file only carries them over HTTP.
 */
export type { ConsoleOptions };

declare module 'fastify' {
  interface FastifyRequest {
    /** The hash of the console session whose key this request carries (set by the cookie hook). */
    consoleSession?: string;
  }
}

type Send = (reply: FastifyReply, url: string, status: number, error: BridgeError) => unknown;

const SESSION_PATH = '/console/api/session';
const GRAPHQL_PATH = '/console/api/graphql';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
export const crossSiteError: BridgeError = {
  code: 'cross_site_request',
  message: 'the console session is refused for a request from another origin',
  details: {},
};

/** Whether a path's requests may be authorised by the cookie (everything but health, metrics and the console's files). */
const cookieApplies = (path: string) =>
  !['/healthz', '/readyz', '/metrics'].includes(path) && (!path.startsWith('/console') || path.startsWith('/console/api/'));

/**
 * The cookie hook, installed before the edge's rate limit: with no Authorization header and a live
 * session cookie, the request carries the session's key as `Authorization: Bearer …` (for this
 * request only), so it is checked, limited and audited as the key. The cookie never authorises a
 * request from another origin, nor an unsafe method without a same-origin marker (403).
 */
export function installConsoleCookie(app: FastifyInstance, opts: ConsoleOptions, send: Send): void {
  app.addHook('onRequest', async (req, reply) => {
    const path = req.url.split('?')[0];
    if (!cookieApplies(path)) return;
    if (req.headers.authorization !== undefined) return; // the key itself: the cookie plays no part
    const site = requestSite(req.headers, opts.baseUrl());
    const unsafe = !SAFE_METHODS.has(req.method);
    const sessionId = sessionIdOf(req.headers.cookie);
    // Signing in from another origin is refused too (it would sign the person in as someone else).
    const refused = sessionId ? site === 'cross' || (unsafe && site !== 'same') : path === SESSION_PATH && site === 'cross';
    if (refused) {
      await send(reply, req.url, 403, crossSiteError);
      return reply;
    }
    if (!sessionId) return;
    const session = await opts.sessions.open(sessionId);
    if (!session) return;
    req.headers.authorization = `Bearer ${session.key}`;
    req.consoleSession = session.hash;
  });
}

/** After the edge's check: a key that stopped working ends the session that carried it (the request answers 401). */
export function installConsoleSessionEnd(app: FastifyInstance, sessions: ConsoleSessions): void {
  app.addHook('onRequest', async (req) => {
    if (req.consoleSession && req.caller?.principal === null) await sessions.endByHash(req.consoleSession);
  });
}

const sessionData = (p: Principal, expiresAt: Date) => ({
  account_id: p.accountId,
  account_slug: p.accountSlug,
  plan: p.plan,
  key_id: p.keyId,
  role: p.role,
  scopes: p.scopes,
  mode: p.mode ?? 'live',
  expires_at: expiresAt.toISOString(),
});

function cookie(baseUrl: string, value: string, maxAgeS: number): string {
  const secure = new URL(baseUrl).protocol === 'https:' ? '; Secure' : '';
  return `${CONSOLE_SESSION_COOKIE}=${value}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAgeS}${secure}`;
}

const graphqlError = (status: number, code: string, message: string) => ({
  errors: [{ message, extensions: { code, status } }],
});

/** The session routes, GraphQL over HTTP and graphql-ws, and the console's files. */
export function registerConsole(
  app: FastifyInstance,
  opts: ConsoleOptions,
  deps: { limits: EdgeLimits; executor: GraphQLExecutor; send: Send },
): ConsoleSockets {
  const { sessions } = opts;
  const { send, limits } = deps;

  const sockets = attachConsoleSocket(app, GRAPHQL_PATH, opts);

  app.post(SESSION_PATH, async (req, reply) => {
    const body = req.body as { api_key?: unknown } | undefined;
    const key = body && typeof body === 'object' ? body.api_key : undefined;
    if (typeof key !== 'string' || key.length === 0) {
      return send(reply, req.url, 400, {
        code: 'invalid_request',
        message: 'request body is invalid',
        details: { fields: [{ field: 'api_key', problem: 'an API key is required' }] },
      });
    }
    // Failed sign-ins count against the address like failed bearer keys do.
    const spent = limits.failures.peek(req.ip);
    if (!spent.ok) {
      reply.header('retry-after', String(spent.retryAfterS));
      return send(reply, req.url, 429, authFailuresError(spent.retryAfterS));
    }
    try {
      const { sessionId, principal, expiresAt } = await sessions.signIn(key);
      const maxAge = Math.ceil((expiresAt.getTime() - Date.now()) / 1000);
      reply.header('set-cookie', cookie(opts.baseUrl(), sessionId, maxAge));
      reply.header('cache-control', 'no-store');
      return reply.status(201).send(successEnvelope('standard', 201, sessionData(principal, expiresAt)));
    } catch (e) {
      if (!isPlatformError(e) || e.status !== 401) throw e;
      limits.failures.take(req.ip);
      return send(reply, req.url, 401, { code: e.code, message: e.message, details: e.details });
    }
  });

  app.get(SESSION_PATH, async (req, reply) => {
    const live = await sessions.principalOf(sessionIdOf(req.headers.cookie));
    reply.header('cache-control', 'no-store');
    if (!live) return send(reply, req.url, 401, { code: 'unauthenticated', message: 'no console session; sign in', details: {} });
    return reply.status(200).send(successEnvelope('standard', 200, sessionData(live.principal, live.session.expiresAt)));
  });

  app.delete(SESSION_PATH, async (req, reply) => {
    const hash = await sessions.end(sessionIdOf(req.headers.cookie));
    if (hash) sockets.closeSession(hash);
    reply.header('set-cookie', cookie(opts.baseUrl(), '', 0));
    return reply.status(204).send();
  });

  app.post(GRAPHQL_PATH, { bodyLimit: GRAPHQL_BODY_LIMIT }, async (req: FastifyRequest, reply: FastifyReply) => {
    if (req.caller?.error) throw req.caller.error; // the key could not be checked: 503
    if (!req.caller?.principal) {
      return reply.status(401).send(graphqlError(401, 'unauthenticated', 'no console session; sign in'));
    }
    const body = req.body as { query?: unknown; variables?: unknown; operationName?: unknown } | undefined;
    const variables = body?.variables ?? {};
    if (
      !body ||
      typeof body.query !== 'string' ||
      typeof variables !== 'object' ||
      Array.isArray(variables) ||
      !(body.operationName === undefined || body.operationName === null || typeof body.operationName === 'string')
    ) {
      return reply
        .status(400)
        .send(graphqlError(400, 'invalid_request', 'send {"query": string, "variables"?: object, "operationName"?: string}'));
    }
    const result = await deps.executor.execute(
      body.query,
      (variables ?? {}) as Record<string, unknown>,
      { authorization: req.headers.authorization, requestId: req.id, clientIp: req.ip },
      typeof body.operationName === 'string' ? body.operationName : undefined,
    );
    reply.header('cache-control', 'no-store');
    return reply.status(200).send(result);
  });
  app.get(GRAPHQL_PATH, async (_req, reply) =>
    reply
      .status(426)
      .header('upgrade', 'websocket')
      .send(graphqlError(426, 'upgrade_required', 'open a graphql-ws socket here')),
  );

  registerConsoleStatic(app, opts);
  return sockets;
}
