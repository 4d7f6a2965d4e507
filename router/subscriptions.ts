import { buildSchema, GraphQLError, type GraphQLSchema } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import type { Server } from 'node:http';
import { WebSocketServer } from 'ws';
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
      if (!ctx.principal || !(await feed.authorize(ctx.principal, args, deps.ports))) {
        throw new GraphQLError(feed.notFound.message, { extensions: { code: feed.notFound.code, status: 404 } });
      }
      return deps.hub.watch(feed.field, feed.keyOfArgs(args));
    };
    field.resolve = (e: unknown) => (feed.toPayload ? feed.toPayload(e) : e);
  }
  return schema;
}

/**
 * graphql-ws on the router's `/graphql` path. Connections must carry a bearer key in
 * `connectionParams.authorization` (or the upgrade request's Authorization header).
 */
export function attachSubscriptions(server: Server, path: string, deps: SubscriptionDeps): { close(): Promise<void> } {
  const wss = new WebSocketServer({ server, path });
  const schema = subscriptionSchema(deps);
  const disposable = useServer<Record<string, unknown>, { principal?: Principal | null }>(
    {
      schema,
      onConnect: async (ctx) => {
        const param = ctx.connectionParams?.authorization ?? ctx.connectionParams?.Authorization;
        const header = typeof param === 'string' ? param : ctx.extra.request.headers.authorization;
        const principal = await deps.authenticate(header);
        if (!principal) return false; // closes with 4403 Forbidden
        ctx.extra.principal = principal;
        return true;
      },
      context: (ctx) => ({ principal: ctx.extra.principal ?? null }),
    },
    wss,
  );
  return {
    close: async () => {
      await disposable.dispose();
      await new Promise<void>((r) => wss.close(() => r()));
    },
  };
}
