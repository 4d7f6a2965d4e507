import {
  buildSchema,
  createSourceEventStream,
  execute,
  type ExecutionArgs,
  type ExecutionResult,
  getOperationAST,
  GraphQLError,
  type GraphQLSchema,
  parse,
  print,
} from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import type { IncomingMessage, Server } from 'node:http';
import { type WebSocket, WebSocketServer } from 'ws';
import type { FeedDefinition } from '../core/area';
import type { Logger } from '../core/logger';
import type { Ports } from '../core/ports';
import { type Principal, requireScope } from '../core/principal';
import { isPlatformError } from '../core/errors';
import { effectiveScopes } from '../core/scopes';
import type { FeedHub } from './feed-hub';

type AnyFeed = FeedDefinition<unknown, Record<string, unknown>>;

/** The graphql-ws schema: one `Subscription` field per declared feed (what schema/subscriptions.graphql holds). */
export function subscriptionSdl(feeds: readonly AnyFeed[]): string {
  const types = [...new Set(feeds.map((f) => f.typesSdl.trim()))].join('\n\n');
  const fields = feeds.map((f) => `  ${f.fieldSdl.trim()}`).join('\n');
  return [
    'type Query {\n  "Placeholder: queries and mutations sent over graphql-ws run on the supergraph, like POST /graphql."\n  _subscriptionsOnly: Boolean\n}',
    types,
    feeds.length ? `type Subscription {\n${fields}\n}` : '',
  ]
    .filter(Boolean)
    .join('\n\n');
}

interface SubscriptionContext {
  principal: Principal | null;
  /** Records a scope an active subscription of this connection relies on (re-checked every round). */
  relyOn?: (scope: string) => void;
}

/** A query or mutation sent over the socket, run on the supergraph as the connection's principal. */
export type SocketOperation = (
  request: { query: string; variables?: Record<string, unknown>; operationName?: string },
  principal: Principal,
  clientIp?: string,
) => Promise<ExecutionResult>;

export interface SubscriptionDeps {
  hub: FeedHub;
  feeds: readonly AnyFeed[];
  ports: Ports;
  authenticate: (authorization: string | undefined) => Promise<Principal | null>;
  /**
   * The key check of the periodic re-check of open connections: bypasses any principal cache, so a
   * revocation or a withdrawn scope ends subscriptions within SUBSCRIPTION_RECHECK_MS (default: authenticate).
   */
  recheck?: (authorization: string | undefined) => Promise<Principal | null>;
  /** The client's address of an upgrade request (the socket's, or a trusted proxy's X-Forwarded-For). */
  clientIp?: (request: IncomingMessage) => string | undefined;
  /** Queries and mutations over the socket (absent: refused). */
  operation?: SocketOperation;
  /** Charges one request to the key's rate-limit bucket; false when over the limit. */
  take?: (principal: Principal) => boolean;
  limits?: Partial<SocketLimits>;
  log: Logger;
}

/** How many graphql-ws connections and live subscriptions one key may hold on one router. */
export interface SocketLimits {
  connectionsPerKey: number;
  subscriptionsPerKey: number;
}
/**
 * Per key and router instance: 1,000 open connections (the fan-out bench opens 1,000 sockets of one
 * key) and 5,000 live subscriptions; beyond them the connection is refused (4429) or the
 * subscription answers 429 `too_many_subscriptions`.
 */
export const DEFAULT_SOCKET_LIMITS: SocketLimits = { connectionsPerKey: 1_000, subscriptionsPerKey: 5_000 };

function subscriptionSchema(deps: SubscriptionDeps): GraphQLSchema {
  const schema = buildSchema(subscriptionSdl(deps.feeds));
  const fields = schema.getSubscriptionType()?.getFields() ?? {};
  for (const feed of deps.feeds) {
    const field = fields[feed.field];
    field.subscribe = async (_root, args: Record<string, unknown>, ctx: SubscriptionContext) => {
      // The scope of the area's REST reads (the kernel's rule for every transport), then the feed's own check.
      if (feed.scope) {
        try {
          requireScope(ctx.principal, feed.scope);
        } catch (e) {
          if (!isPlatformError(e)) throw e;
          throw new GraphQLError(e.message, { extensions: { code: e.code, status: e.status, details: e.details } });
        }
        ctx.relyOn?.(feed.scope);
      }
      // What the principal may not see is concealed exactly like what does not exist.
      const allowed = ctx.principal ? await feed.authorize(ctx.principal, args, deps.ports) : false;
      if (!allowed || (allowed !== true && allowed.length === 0)) {
        throw new GraphQLError(feed.notFound.message, { extensions: { code: feed.notFound.code, status: 404 } });
      }
      return deps.hub.watch(feed.field, allowed === true ? feed.keyOfArgs(args) : allowed);
    };
    field.resolve = (e: unknown) => (feed.toPayload ? feed.toPayload(e) : e);
  }
  return schema;
}

/**
 * graphql's `subscribe`, with each event's execution shared by every subscription of the same
 * operation and variables: the feed hub hands one event object to all the subscribers of a key, so
 * a thousand subscribers of a project cost one execution per event, not a thousand (the fan-out's
 * p99 is the time to reach the last of them). Sound because a feed's `resolve` reads the event
 * only (authorisation happens once, at subscribe): a feed that resolved per principal would have
 * to key the shared results by it.
 */
export function sharedSubscribe(): (args: ExecutionArgs) => Promise<AsyncIterableIterator<ExecutionResult> | ExecutionResult> {
  const results = new WeakMap<object, Map<string, Promise<ExecutionResult>>>();
  return async (args) => {
    const source = await createSourceEventStream(args);
    if (!(Symbol.asyncIterator in source)) return source;
    const events = source[Symbol.asyncIterator]();
    const key = `${args.operationName ?? ''}\u0000${print(args.document)}\u0000${JSON.stringify(args.variableValues ?? {})}`;
    const run = (event: unknown): Promise<ExecutionResult> => {
      const once = () => Promise.resolve(execute({ ...args, rootValue: event }));
      if (event === null || typeof event !== 'object') return once();
      let byOperation = results.get(event);
      if (!byOperation) results.set(event, (byOperation = new Map()));
      let result = byOperation.get(key);
      if (!result) byOperation.set(key, (result = once()));
      return result;
    };
    const done = (): IteratorResult<ExecutionResult> => ({ value: undefined, done: true });
    const shared: AsyncIterableIterator<ExecutionResult> = {
      [Symbol.asyncIterator]() {
        return shared;
      },
      async next() {
        const r = await events.next();
        return r.done ? done() : { value: await run(r.value), done: false };
      },
      async return() {
        await events.return?.();
        return done();
      },
      async throw(e: unknown) {
        await events.return?.();
        throw e;
      },
    };
    return shared;
  };
}

/**
 * How often open connections have their key checked again. The re-check bypasses the principal
 * cache (`SubscriptionDeps.recheck`), so a revoked key's (or a withdrawn scope's) subscriptions end
 * within this interval plus one lookup: under the 5 s revocation contract.
 */
export const SUBSCRIPTION_RECHECK_MS = 2_000;

interface SocketState {
  header: string | undefined;
  /** The client's address (the upgrade request's, through a trusted proxy). */
  clientIp?: string;
  principal: Principal;
  /** Scopes the connection's live subscriptions rely on. */
  relied: Set<string>;
}

const socketError = (message: string, code: string, status: number) =>
  new GraphQLError(message, { extensions: { code, status } });

/**
 * graphql-ws on the router's `/graphql` path. Connections must carry a bearer key in
 * `connectionParams.authorization` (or the upgrade request's Authorization header); the key is
 * checked again every SUBSCRIPTION_RECHECK_MS and the connection closed (4403) once it is revoked
 * or lacks a scope one of its subscriptions needs. Queries and mutations sent over the socket run
 * on the supergraph as the connection's key (same scopes, validation limits and rate limit as POST).
 */
export function attachSubscriptions(server: Server, path: string, deps: SubscriptionDeps): { close(): Promise<void> } {
  const limits: SocketLimits = { ...DEFAULT_SOCKET_LIMITS, ...deps.limits };
  const wss = new WebSocketServer({ server, path });
  const schema = subscriptionSchema(deps);
  const open = new Map<WebSocket, SocketState>();
  const connections = new Map<string, number>();
  const subscriptions = new Map<string, number>();
  const bump = (counts: Map<string, number>, key: string, by: number) => {
    const n = (counts.get(key) ?? 0) + by;
    if (n <= 0) counts.delete(key);
    else counts.set(key, n);
  };
  const refuse = (socket: WebSocket, reason: string) => {
    if (!open.has(socket)) return;
    open.delete(socket);
    socket.close(4403, reason);
  };
  const recheck = setInterval(() => {
    // One check per key, not per socket: a thousand sockets of one key cost one lookup a round.
    const byHeader = new Map<string | undefined, WebSocket[]>();
    for (const [socket, state] of open) {
      const sockets = byHeader.get(state.header);
      if (sockets) sockets.push(socket);
      else byHeader.set(state.header, [socket]);
    }
    for (const [header, sockets] of byHeader) {
      (deps.recheck ?? deps.authenticate)(header).then(
        (principal) => {
          for (const socket of sockets) {
            const state = open.get(socket);
            if (!state) continue;
            if (!principal) {
              refuse(socket, 'Forbidden: key revoked');
              continue;
            }
            state.principal = principal;
            if (state.relied.size === 0) continue;
            const held = effectiveScopes(principal.role, principal.scopes ?? []);
            if ([...state.relied].some((scope) => !held.includes(scope))) refuse(socket, 'Forbidden: scope withdrawn');
          }
        },
        () => undefined, // an engine hiccup is not a revocation; the next round checks again
      );
    }
  }, SUBSCRIPTION_RECHECK_MS);
  recheck.unref();

  /** Counts a live subscription against its key, in one synchronous step (no read-then-create race). */
  const counted = (
    state: SocketState,
    stream: AsyncIterableIterator<ExecutionResult>,
  ): AsyncIterableIterator<ExecutionResult> | ExecutionResult => {
    const keyId = state.principal.keyId;
    if ((subscriptions.get(keyId) ?? 0) >= limits.subscriptionsPerKey) {
      void stream.return?.();
      return {
        errors: [
          socketError(`this key already holds ${limits.subscriptionsPerKey} live subscriptions`, 'too_many_subscriptions', 429),
        ],
      };
    }
    bump(subscriptions, keyId, 1);
    let released = false;
    const release = () => {
      if (!released) bump(subscriptions, keyId, -1);
      released = true;
    };
    const wrapped: AsyncIterableIterator<ExecutionResult> = {
      [Symbol.asyncIterator]: () => wrapped,
      next: async () => {
        const r = await stream.next();
        if (r.done) release();
        return r;
      },
      return: async () => {
        release();
        return (await stream.return?.()) ?? { value: undefined, done: true };
      },
      throw: async (e: unknown) => {
        release();
        if (stream.throw) return stream.throw(e);
        throw e;
      },
    };
    return wrapped;
  };

  const subscribe = sharedSubscribe();
  const disposable = useServer<Record<string, unknown>, { state?: SocketState }>(
    {
      schema,
      execute: async (args) => {
        const op = (args.contextValue as { socketOperation?: Parameters<SocketOperation>[0] }).socketOperation;
        const state = (args.contextValue as { state: SocketState }).state;
        if (op && deps.operation) return deps.operation(op, state.principal, state.clientIp);
        return execute(args);
      },
      subscribe,
      onConnect: async (ctx) => {
        const param = ctx.connectionParams?.authorization ?? ctx.connectionParams?.Authorization;
        const header = typeof param === 'string' ? param : ctx.extra.request.headers.authorization;
        const principal = await deps.authenticate(header);
        if (!principal) return false; // closes with 4403 Forbidden
        if ((connections.get(principal.keyId) ?? 0) >= limits.connectionsPerKey) {
          ctx.extra.socket.close(4429, `Too many connections for this key (${limits.connectionsPerKey})`);
          return false;
        }
        bump(connections, principal.keyId, 1);
        const state: SocketState = { header, principal, relied: new Set(), clientIp: deps.clientIp?.(ctx.extra.request) };
        ctx.extra.state = state;
        open.set(ctx.extra.socket, state);
        return true;
      },
      onSubscribe: (ctx, _id, payload) => {
        const state = ctx.extra.state;
        if (!state) return [socketError('bearer token missing or invalid', 'unauthenticated', 401)];
        let document;
        try {
          document = parse(payload.query);
        } catch (e) {
          return [socketError((e as Error).message, 'invalid_request', 400)];
        }
        const operation = getOperationAST(document, payload.operationName);
        // Subscriptions have their own cap per key (limits.subscriptionsPerKey); graphql-ws validates them.
        if (!operation || operation.operation === 'subscription') return;
        if (!deps.operation) return [socketError('send queries and mutations to POST /graphql', 'invalid_request', 400)];
        // A query or mutation costs what it costs over POST: one request of the key's bucket.
        if (deps.take && !deps.take(state.principal)) {
          return [socketError('too many requests for this key; retry later', 'rate_limited', 429)];
        }
        return {
          schema,
          document,
          operationName: payload.operationName,
          variableValues: payload.variables ?? undefined,
          contextValue: {
            state,
            socketOperation: {
              query: payload.query,
              variables: payload.variables ?? undefined,
              operationName: payload.operationName ?? undefined,
            },
          },
        };
      },
      onOperation: (ctx, _id, _payload, _args, result) => {
        const state = ctx.extra.state;
        if (state && typeof result === 'object' && result !== null && Symbol.asyncIterator in result) {
          return counted(state, result as AsyncIterableIterator<ExecutionResult>);
        }
        return undefined;
      },
      onClose: (ctx) => {
        const state = ctx.extra.state;
        if (state) bump(connections, state.principal.keyId, -1);
        open.delete(ctx.extra.socket);
      },
      context: (ctx): SubscriptionContext & { state?: SocketState } => ({
        principal: ctx.extra.state?.principal ?? null,
        state: ctx.extra.state,
        relyOn: (scope) => ctx.extra.state?.relied.add(scope),
      }),
    },
    wss,
  );
  return {
    close: async () => {
      clearInterval(recheck);
      await disposable.dispose();
      await new Promise<void>((r) => wss.close(() => r()));
    },
  };
}
