import { Client, cacheExchange, fetchExchange, mapExchange, subscriptionExchange } from 'urql';
import { createClient as createWsClient, type Client as WsClient } from 'graphql-ws/client';
import { useSyncExternalStore } from 'react';
import { notifyUnauthorized } from './api';

/** Queries and mutations over HTTP, subscriptions over graphql-ws, both at the console's GraphQL path. */
export const GRAPHQL_PATH = '/console/api/graphql';

// Whether the live feed's socket is up: pages poll faster while it is not (the fallback of the live views).
let liveConnected = false;
const liveListeners = new Set<() => void>();
function setLive(v: boolean) {
  if (liveConnected === v) return;
  liveConnected = v;
  for (const l of liveListeners) l();
}

export function useLiveConnected(): boolean {
  return useSyncExternalStore(
    (l) => {
      liveListeners.add(l);
      return () => liveListeners.delete(l);
    },
    () => liveConnected,
  );
}

function wsUrl(): string {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${location.host}${GRAPHQL_PATH}`;
}

export interface ConsoleClient {
  client: Client;
  dispose: () => void;
}

/** One client per session: signing out drops it, with its cache and its socket. */
export function createConsoleClient(): ConsoleClient {
  const ws: WsClient = createWsClient({
    url: wsUrl(),
    lazy: true,
    lazyCloseTimeout: 3000,
    retryAttempts: Infinity,
    shouldRetry: () => true,
    on: {
      connected: () => setLive(true),
      closed: () => setLive(false),
    },
  });
  const client = new Client({
    url: GRAPHQL_PATH,
    fetchOptions: { credentials: 'same-origin' },
    // The console's GraphQL route takes POST only (GET there is the websocket's upgrade).
    preferGetMethod: false,
    // No stale answers for an operator console: cached results show at once and are refetched.
    requestPolicy: 'cache-and-network',
    exchanges: [
      mapExchange({
        onError(error) {
          const status = (error.response as Response | undefined)?.status;
          const unauthenticated = error.graphQLErrors.some((e) => e.extensions?.code === 'UNAUTHENTICATED');
          if (status === 401 || unauthenticated) notifyUnauthorized();
        },
      }),
      cacheExchange,
      fetchExchange,
      subscriptionExchange({
        forwardSubscription(request) {
          const input = { ...request, query: request.query || '' };
          return {
            subscribe(sink) {
              const unsubscribe = ws.subscribe(input, sink);
              return { unsubscribe };
            },
          };
        },
      }),
    ],
  });
  return {
    client,
    dispose: () => {
      setLive(false);
      void ws.dispose();
    },
  };
}
