import {
  buildSchema,
  createSourceEventStream,
  execute,
  type ExecutionArgs,
  type ExecutionResult,
  GraphQLError,
  type GraphQLSchema,
  print,
} from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import type { Server } from 'node:http';
import { type WebSocket, WebSocketServer } from 'ws';
import type { FeedDefinition } from '../core/area';
import type { Logger } from '../core/logger';
import type { Ports } from '../core/ports';
import type { Principal } from '../core/principal';
import type { FeedHub } from './feed-hub';

type AnyFeed = FeedDefinition<unknown, Record<string, unknown>>;

/** The graphql-ws schema: one `Subscription` field per declared feed (what schema/subscriptions.graphql holds). */
export function subscriptionSdl(feeds: readonly AnyFeed[]): string {
  const types = [...new Set(feeds.map((f) => f.typesSdl.trim()))].join('\n\n');
  const fields = feeds.map((f) => `  ${f.fieldSdl.trim()}`).join('\n');
  return [
    'type Query {\n  "Subscriptions only; queries and mutations go to POST /graphql."\n  _subscriptionsOnly: Boolean\n}',
    types,
    feeds.length ? `type Subscription {\n${fields}\n}` : '',
  ]
    .filter(Boolean)
    .join('\n\n');
}

interface SubscriptionContext {
  principal: Principal | null;
}

export interface SubscriptionDeps {
  hub: FeedHub;
  feeds: readonly AnyFeed[];
  ports: Ports;
  authenticate: (authorization: string | undefined) => Promise<Principal | null>;
  log: Logger;
}

function subscriptionSchema(deps: SubscriptionDeps): GraphQLSchema {
  const schema = buildSchema(subscriptionSdl(deps.feeds));
  const fields = schema.getSubscriptionType()?.getFields() ?? {};
  for (const feed of deps.feeds) {
    const field = fields[feed.field];
    field.subscribe = async (_root, args: Record<string, unknown>, ctx: SubscriptionContext) => {
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
 * How often open connections have their key checked again. With the 5 s principal cache of the
 * identity area, a revoked key's subscriptions end within about 7 s of the revocation.
 */
export const SUBSCRIPTION_RECHECK_MS = 2_000;

/**
 * graphql-ws on the router's `/graphql` path. Connections must carry a bearer key in
 * `connectionParams.authorization` (or the upgrade request's Authorization header); the key is
 * checked again every SUBSCRIPTION_RECHECK_MS and the connection closed (4403) once it is revoked.
 */
export function attachSubscriptions(server: Server, path: string, deps: SubscriptionDeps): { close(): Promise<void> } {
  const wss = new WebSocketServer({ server, path });
  const schema = subscriptionSchema(deps);
  const open = new Map<WebSocket, string | undefined>();
  const recheck = setInterval(() => {
    // One check per key, not per socket: a thousand sockets of one key cost one lookup a round.
    const byHeader = new Map<string | undefined, WebSocket[]>();
    for (const [socket, header] of open) {
      const sockets = byHeader.get(header);
      if (sockets) sockets.push(socket);
      else byHeader.set(header, [socket]);
    }
    for (const [header, sockets] of byHeader) {
      deps.authenticate(header).then(
        (principal) => {
          if (principal) return;
          for (const socket of sockets) {
            if (!open.has(socket)) continue;
            open.delete(socket);
            socket.close(4403, 'Forbidden: key revoked');
          }
        },
        () => undefined, // an engine hiccup is not a revocation; the next round checks again
      );
    }
  }, SUBSCRIPTION_RECHECK_MS);
  recheck.unref();
  const disposable = useServer<Record<string, unknown>, { principal?: Principal | null }>(
    {
      schema,
      subscribe: sharedSubscribe(),
      onConnect: async (ctx) => {
        const param = ctx.connectionParams?.authorization ?? ctx.connectionParams?.Authorization;
        const header = typeof param === 'string' ? param : ctx.extra.request.headers.authorization;
        const principal = await deps.authenticate(header);
        if (!principal) return false; // closes with 4403 Forbidden
        ctx.extra.principal = principal;
        open.set(ctx.extra.socket, header);
        return true;
      },
      onClose: (ctx) => {
        open.delete(ctx.extra.socket);
      },
      context: (ctx) => ({ principal: ctx.extra.principal ?? null }),
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
