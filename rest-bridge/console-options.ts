import type { ConsoleSessions } from '../core/console-sessions';

/** What the console's server side needs from the bridge (rest-bridge/console.ts and its socket and file halves). */
export interface ConsoleOptions {
  sessions: ConsoleSessions;
  /** The bridge's own address (BASE_URL), read per request: a test's random port is known only after listen. */
  baseUrl: () => string;
  /** {cdn_url}: console pages show its images and videos. */
  cdnUrl?: () => string;
  /** The router's graphql-ws address (`ws://host:port/graphql`), where console sockets are proxied. */
  routerWsUrl: () => string | undefined;
  /** The built single-page app (default: dist/console/ under the project root). */
  staticDir?: string;
}
