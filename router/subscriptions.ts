import { buildSchema, GraphQLError, type GraphQLSchema } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import type { Server } from 'node:http';
import { WebSocketServer } from 'ws';
import type { Logger } from '../core/logger';
import type { Principal } from '../core/principal';
import type { OperationEvent, OperationFeed } from './operation-feed';

export const SUBSCRIPTION_SDL = /* GraphQL */ `
  type Query {
    "Subscriptions only; queries and mutations go to POST /graphql."
    _subscriptionsOnly: Boolean
  }
  "A status or step change of a durable operation."
  type OperationUpdate {
    id: ID!
    projectId: ID!
    status: String!
    step: String!
    operationType: String!
    resourceType: String!
    errorCode: String
    updatedAt: String!
  }
  type Subscription {
    "Every status change of the project's operations, in order."
    operationUpdated(projectId: ID!): OperationUpdate!
  }
`;

interface SubscriptionContext {
  principal: Principal | null;
}

export interface SubscriptionDeps {
  feed: OperationFeed;
  authenticate: (authorization: string | undefined) => Promise<Principal | null>;
  canAccessProject: (principal: Principal, projectId: string) => Promise<boolean>;
  log: Logger;
}

function subscriptionSchema(deps: SubscriptionDeps): GraphQLSchema {
  const schema = buildSchema(SUBSCRIPTION_SDL);
  const field = schema.getSubscriptionType()!.getFields().operationUpdated;
  field.subscribe = async (_root, args: { projectId: string }, ctx: SubscriptionContext) => {
    // An inaccessible project is concealed exactly like a missing one.
    if (!ctx.principal || !(await deps.canAccessProject(ctx.principal, args.projectId))) {
      throw new GraphQLError('project not found', { extensions: { code: 'project_not_found', status: 404 } });
    }
    return deps.feed.watch(args.projectId);
  };
  field.resolve = (e: OperationEvent) => e;
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
