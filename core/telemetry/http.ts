import { context, propagation, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { httpDuration, httpRequests, metricsText } from './metrics';
import { type RequestScope, tracer, withRequestScope } from './tracing';

/** Route label of requests no route matched (404s): one value, whatever the path. */
export const NO_ROUTE = '(no route)';
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

interface Traced {
  span: Span;
  scope: RequestScope;
}
const traced = new WeakMap<IncomingMessage, Traced>();

/**
 * Every request to this listener runs in its own OpenTelemetry context: a SERVER span, child of the
 * caller's `traceparent` when it sends one, and a request scope that log lines read. The listener's
 * `request` handlers (Fastify's) are re-attached inside that context, and the request and response
 * emitters are bound to it, so body parsing and `onResponse` hooks keep it too.
 */
function traceRequests(app: FastifyInstance, component: string): void {
  const server = app.server;
  const handlers = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = tracer().startSpan(
      `${req.method ?? 'HTTP'} ${component}`,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method ?? '', 'platform.component': component } },
      parent,
    );
    const scope: RequestScope = {};
    traced.set(req, { span, scope });
    const ctx = withRequestScope(trace.setSpan(parent, span), scope);
    res.once('close', () => {
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    context.with(ctx, () => {
      context.bind(ctx, req);
      context.bind(ctx, res);
      for (const h of handlers) h.call(server, req, res);
    });
  });
}

const routeOf = (req: FastifyRequest): string => req.routeOptions?.url ?? NO_ROUTE;

/**
 * Traces and measures one Fastify listener (called by `installAccessLog`): the span gets the route
 * template as its name once routing is done; the request counter and duration histogram are
 * labelled by listener, method, route template and status.
 */
export function installHttpTelemetry(app: FastifyInstance, component: string): void {
  traceRequests(app, component);
  app.addHook('onRequest', async (req) => {
    const t = traced.get(req.raw);
    if (!t) return;
    const given = req.headers['x-request-id'];
    // A subgraph or router behind the bridge keeps the bridge's id (Fastify numbers its own).
    t.scope.requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : String(req.id);
  });
  app.addHook('onResponse', async (req, reply) => {
    const route = routeOf(req);
    const status = String(reply.statusCode);
    httpRequests.inc({ component, method: req.method, route, status });
    httpDuration.observe({ component, method: req.method, route }, reply.elapsedTime / 1000);
    const t = traced.get(req.raw);
    if (t) {
      t.span.updateName(`${req.method} ${route}`);
      t.span.setAttribute('http.route', route);
    }
  });
}

/** `GET /metrics`: the process's Prometheus text (each process in the split topology serves its own). */
export function installMetricsRoute(app: FastifyInstance): void {
  app.get('/metrics', async (_req, reply) => {
    const { contentType, body } = await metricsText();
    return reply.header('content-type', contentType).header('cache-control', 'no-store').send(body);
  });
}
