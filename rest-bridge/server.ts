import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { installAccessLog } from '../core/access-log';
import { installMetricsRoute } from '../core/telemetry/http';
import type { GraphQLFormattedError } from 'graphql';
import { randomUUID } from 'node:crypto';
import type { ZodError, ZodIssue } from 'zod';
import type { Logger } from '../core/logger';
import { areaError, type BridgeError, errorEnvelope, successEnvelope } from './envelopes';
import type { GraphQLExecutor } from '../contract/graphql-executor';
import { registerMethodNotAllowed } from './method-not-allowed';
import { installLingeringClose } from './lingering-close';
import { buildOpenApi } from '../contract/openapi';
import { PLATFORM_ROUTES } from '../contract/openapi-byte-routes';
import type { ByteRoute } from '../core/rest-byte-route';
import { type AreaRoute, type EnvelopeKind, variablesOf } from '../core/rest-route';
import { envelopeResolver, toFastifyPath } from './route-paths';
import { bridgeUnavailable, withRetryAfter } from './retry-after';
import { authFailuresError, EdgeLimits, installRateLimit, rateLimitedError } from '../core/rate-limit';
import { isPlatformError } from '../core/errors';
import type { Principal } from '../core/principal';
import { checkAccess } from '../core/subgraph-kit';
import { type ConsoleOptions, installConsoleCookie, installConsoleSessionEnd, registerConsole } from './console';

/** The parser's error for a body with a prototype-poisoning key. */
const FORBIDDEN_JSON_KEY = 'PLATFORM_FORBIDDEN_JSON_KEY';

/** Largest JSON body any route accepts unless it says less: 1 MiB. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface BridgeOptions {
  executor: GraphQLExecutor;
  log: Logger;
  /** Readiness of the engines behind the platform, for /readyz. */
  ready: () => Promise<Record<string, 'ok' | string>>;
  /** Every area's route rows, bound to their documents (the composition root's `areaRoutes()`). */
  routes: AreaRoute[];
  /** Raw byte routes of the areas (uploads, signed inbound hooks), each in its own Fastify scope. */
  dataPlanes?: Array<(app: FastifyInstance) => void | Promise<void>>;
  /** What the data planes serve, as their areas describe it (the composition root's `areaByteRoutes()`). */
  byteRoutes?: readonly ByteRoute[];
  /** TRUST_PROXY: proxies whose X-Forwarded-For names the client. */
  trustProxy?: string;
  /** Requests per minute per key (default DEFAULT_RATE_LIMIT_PER_MINUTE). */
  rateLimitPerMinute?: number;
  /** Failed authentications per minute per client address (default DEFAULT_AUTH_FAILURES_PER_MINUTE). */
  authFailuresPerMinute?: number;
  /**
   * The identity check of a bearer key: the edge keys its rate-limit bucket by the key id and
   * answers 401/403 before validating a request (absent: the subgraph decides, after validation).
   */
  authenticate?: (token: string) => Promise<Principal | null>;
  /** The web console: sessions, its GraphQL and files under `/console/` (docs/decisions/0280-console-sessions.md). */
  console?: ConsoleOptions;
}

/** Commerce answers the kernel's 401/403 in its own codes (spec 1, convention 3). */

/** HTTP statuses of GraphQL error codes that carry no status of their own. */
const CODE_STATUS: Record<string, number> = {
  invalid_request: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  GRAPHQL_VALIDATION_FAILED: 400,
  BAD_USER_INPUT: 400,
};

export function fromGraphQLErrors(errors: readonly GraphQLFormattedError[]): { status: number; error: BridgeError } {
  const first = errors[0];
  const ext = (first.extensions ?? {}) as { code?: unknown; status?: unknown; details?: unknown };
  const code = typeof ext.code === 'string' ? ext.code : 'internal_error';
  const status = typeof ext.status === 'number' ? ext.status : (CODE_STATUS[code] ?? 500);
  const known = typeof ext.status === 'number' || code in CODE_STATUS;
  return {
    status,
    error: {
      code: known ? code : 'internal_error',
      message: known ? first.message : 'internal error',
      details: known && ext.details && typeof ext.details === 'object' ? (ext.details as Record<string, unknown>) : {},
    },
  };
}

/** A union's issues are those of the branch the input came closest to (fewest issues). */
function flatIssues(e: ZodError): ZodIssue[] {
  return e.issues.flatMap((i) =>
    i.code === 'invalid_union' ? flatIssues([...i.unionErrors].sort((a, b) => a.issues.length - b.issues.length)[0]) : [i],
  );
}

function fromZod(where: 'body' | 'query', e: ZodError): BridgeError {
  return {
    code: 'invalid_request',
    message: `request ${where} is invalid`,
    details: {
      fields: flatIssues(e).map((i) => ({
        field: i.path.join('.') || (i.code === 'unrecognized_keys' ? i.keys.join(',') : where),
        problem: i.message,
      })),
    },
  };
}

/** The REST bridge: every documented route → one fixed GraphQL operation → the area's envelope. */
export async function buildBridge(opts: BridgeOptions): Promise<FastifyInstance> {
  const routes = opts.routes;
  const byteRoutes = [...PLATFORM_ROUTES, ...(opts.byteRoutes ?? [])];
  // Byte routes count too: the commerce webhook receiver's path answers 404/405/429 as commerce.
  const envelopeForPath = envelopeResolver([...routes, ...byteRoutes]);
  const app = Fastify({
    logger: false,
    bodyLimit: DEFAULT_BODY_LIMIT,
    // The client address routes see (`ip`): the socket's, or a trusted proxy's X-Forwarded-For.
    trustProxy: opts.trustProxy ? opts.trustProxy.split(',').map((s) => s.trim()) : false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
  });

  // Strict JSON: exactly one JSON value; an empty body is "no body" (action routes are often sent that way).
  const defaultJson = app.getDefaultJsonParser('error', 'error');
  // JSON only (multipart uploads get their own parser in the Assets area): anything else is a 415.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    // JSON's own white space only (RFC 8259: space, tab, LF, CR): a form feed is not "no body".
    if (typeof body === 'string' && /^[ \t\n\r]*$/.test(body)) return done(null, undefined);
    defaultJson(req, body as string, (err, value) => {
      if (!err) return done(null, value);
      // Fastify's parser (secure-json-parse) also refuses `__proto__` and `constructor.prototype`
      // keys at any depth, with the same error as broken JSON; tell the two apart for the client.
      try {
        JSON.parse(body as string);
      } catch {
        return done(err, undefined);
      }
      done(Object.assign(new Error('forbidden JSON key'), { code: FORBIDDEN_JSON_KEY, statusCode: 400 }), undefined);
    });
  });

  app.addHook('onSend', async (req, reply) => {
    reply.header('x-request-id', req.id);
  });
  installLingeringClose(app);
  installAccessLog(app, opts.log, 'bridge');
  const authenticate =
    opts.authenticate ??
    (async () => {
      throw new Error('no edge authentication');
    });
  const limits = new EdgeLimits(authenticate, {
    perMinute: opts.rateLimitPerMinute,
    authFailuresPerMinute: opts.authFailuresPerMinute,
  });
  // A console session's cookie stands for its key before the key is checked and counted.
  const consoleSend = (reply: FastifyReply, url: string, status: number, e: BridgeError) =>
    send(reply, envelopeForPath(url), status, e);
  if (opts.console) installConsoleCookie(app, opts.console, consoleSend);
  installRateLimit(app, limits, (req, reply, retryAfterS, reason) =>
    send(reply, envelopeForPath(req.url), 429, (reason === 'auth_failures' ? authFailuresError : rateLimitedError)(retryAfterS)),
  );
  if (opts.console) installConsoleSessionEnd(app, opts.console.sessions);

  // Authentication before validation: 401 (no or bad key), then 403 (scope), then 400/404/413/415.
  const rowOf = new Map(routes.map((r) => [`${r.method} ${toFastifyPath(r.path)}`, r]));
  const routeOf = (req: FastifyRequest) => rowOf.get(`${req.method} ${req.routeOptions?.url ?? ''}`);
  const refusal = (req: FastifyRequest, route: AreaRoute | undefined): { status: number; error: BridgeError } | null => {
    if (route?.public) return null;
    const principal = req.caller?.principal;
    if (principal === undefined) return null; // not identified here (or the engine is down): the subgraph decides
    try {
      checkAccess(route?.scope ? { scope: route.scope } : 'key', principal);
      return null;
    } catch (e) {
      if (!isPlatformError(e)) throw e;
      // `send` maps the code into the commerce envelope's on a commerce route (areaError).
      return { status: e.status, error: { code: e.code, message: e.message, details: e.details } };
    }
  };

  const send = (reply: FastifyReply, kind: EnvelopeKind, given: number, e: BridgeError) => {
    const { status, error } = areaError(kind, given, e);
    return withRetryAfter(reply, status, error.details)
      .status(status)
      .send(errorEnvelope(kind, status, error));
  };

  app.setNotFoundHandler((req, reply) =>
    send(reply, envelopeForPath(req.url), 404, {
      code: 'route_not_found',
      message: `no route for ${req.method} ${req.url.split('?')[0]}`,
      details: {},
    }),
  );

  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, req, reply) => {
    const kind = envelopeForPath(req.url);
    // A body the parser refused (size, media type, JSON): the key is checked first.
    const status = err.statusCode ?? 0;
    if ((status >= 400 && status < 500 && status !== 429) || err instanceof SyntaxError) {
      const route = routeOf(req);
      const refused = route ? refusal(req, route) : null;
      if (refused) return send(reply, kind, refused.status, refused.error);
    }
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return send(reply, kind, 413, { code: 'payload_too_large', message: 'request body is too large', details: {} });
    }
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return send(reply, kind, 415, {
        code: 'unsupported_media_type',
        message: 'send JSON (Content-Type: application/json)',
        details: {},
      });
    }
    // Valid JSON, refused for what those keys could do to objects merged from it.
    if (err.code === FORBIDDEN_JSON_KEY) {
      return send(reply, kind, 400, {
        code: 'forbidden_json_key',
        message: 'request body has a `__proto__` or `constructor.prototype` key, which is refused at any depth',
        details: {},
      });
    }
    if (err.statusCode === 400 || err instanceof SyntaxError) {
      return send(reply, kind, 400, { code: 'invalid_json', message: 'request body is not valid JSON', details: {} });
    }
    const unavailable = bridgeUnavailable(err);
    if (unavailable) return send(reply, kind, 503, unavailable);
    opts.log.error({ err, requestId: req.id }, 'bridge request failed');
    return send(reply, kind, 500, { code: 'internal_error', message: 'internal error', details: {} });
  });

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) => {
    const checks = await opts.ready();
    const ok = Object.values(checks).every((v) => v === 'ok' || v === 'degraded');
    return reply.status(ok ? 200 : 503).send({ status: ok ? 'ready' : 'not_ready', checks });
  });
  const openapi = buildOpenApi(routes, opts.byteRoutes);
  app.get('/api/v1/openapi.json', async () => openapi);
  installMetricsRoute(app);

  for (const plane of opts.dataPlanes ?? []) await app.register(async (scope) => plane(scope));

  for (const route of routes) {
    const document = route.document;
    app.route({
      method: route.method,
      url: toFastifyPath(route.path),
      bodyLimit: route.bodyLimit,
      handler: async (req: FastifyRequest, reply: FastifyReply) => {
        // The key could not be checked (an engine is down): answered as such (503), not checked twice.
        if (req.caller?.error && opts.authenticate && !route.public) throw req.caller.error;
        const refused = refusal(req, route);
        if (refused) return send(reply, route.envelope, refused.status, refused.error);
        let body: unknown = undefined;
        if (route.body) {
          // No body reads as `{}`; a JSON `null` is a body, and not an object (400 like any other).
          const parsed = route.body.safeParse(req.body === undefined ? {} : req.body);
          if (!parsed.success) return send(reply, route.envelope, 400, fromZod('body', parsed.error));
          body = parsed.data;
        } else if (
          req.body !== undefined &&
          req.body !== null &&
          !(typeof req.body === 'object' && Object.keys(req.body).length === 0)
        ) {
          return send(reply, route.envelope, 400, {
            code: 'invalid_request',
            message: 'this route takes no request body',
            details: {},
          });
        }
        let query: unknown = req.query;
        if (route.query) {
          const parsed = route.query.safeParse(req.query ?? {});
          if (!parsed.success) return send(reply, route.envelope, 400, fromZod('query', parsed.error));
          query = parsed.data;
        }
        const variables = variablesOf(route, {
          params: req.params as Record<string, string>,
          query: query as Record<string, unknown>,
          body,
          headers: req.headers,
          ip: req.ip,
        });
        const result = await opts.executor.execute(document, variables, {
          authorization: req.headers.authorization,
          requestId: req.id,
          clientIp: req.ip,
        });
        if (result.errors?.length || !result.data) {
          const { status, error } = fromGraphQLErrors(result.errors ?? [{ message: 'no data' }]);
          return send(reply, route.envelope, status, error);
        }
        const payload = route.select(result.data);
        if (route.headers) reply.headers(route.headers(payload));
        if (route.status === 204) return reply.status(204).send();
        return reply.status(route.status).send(successEnvelope(route.envelope, route.status, payload));
      },
    });
  }
  if (opts.console) registerConsole(app, opts.console, { limits, executor: opts.executor, send: consoleSend });
  registerMethodNotAllowed(app, [...routes, ...byteRoutes]);
  return app;
}
