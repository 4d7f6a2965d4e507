import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { startPlatform, type Platform, type PlatformOptions } from '../../app/platform';
import { loadConfig } from '../../core/config';
import type { Plan, Role } from '../../core/principal';

export interface HttpResult<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface TestPlatform {
  /** Names this platform's database (`t_<id>`) and topic prefix (`t<id>`); `shareWith` reuses them. */
  id: string;
  platform: Platform;
  bridgeUrl: string;
  routerUrl: string;
  /** A fresh account with a key (each test builds its own tenant). */
  createKey(opts?: {
    plan?: Plan;
    role?: Role;
    scopes?: string[];
    mode?: 'live' | 'test';
    account?: string;
  }): Promise<{ key: string; accountId: string; account: string }>;
  rest<T = any>(
    method: string,
    path: string,
    opts?: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> },
  ): Promise<HttpResult<T>>;
  gql<T = any>(
    query: string,
    variables?: Record<string, unknown>,
    key?: string,
  ): Promise<{ status: number; data?: T; errors?: any[] }>;
  stop(): Promise<void>;
}

export const uniqueName = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;

/**
 * Starts the whole platform in this process on free ports, against the real MongoDB-wire server
 * (its own database) and the real Kafka broker (its own topic prefix).
 */
export async function startTestPlatform(
  env: Record<string, string> = {},
  opts: Partial<PlatformOptions> & { shareWith?: TestPlatform } = {},
): Promise<TestPlatform> {
  const { shareWith, ...platformOpts } = opts;
  const id = shareWith?.id ?? randomBytes(4).toString('hex');
  const base = loadConfig(process.env);
  const dbUri = base.mongodbUri.replace(/\/[^/?]*(\?|$)/, `/t_${id}$1`);
  const config = loadConfig({
    ...process.env,
    SIMULATED_STEP_DELAY_MS: '40',
    // Fast tests inject faults into the simulated executor; a test asks for the real one by env.
    PUBLISHER_EXECUTOR: 'simulated',
    // Tests poll freely; the rate limit has its own test (test/core/router-limits.test.ts).
    RATE_LIMIT_PER_MINUTE: '1000000',
    AUTH_FAILURES_PER_MINUTE: '1000000',
    ...env,
    MONGODB_URI: dbUri,
    KAFKA_BROKERS: base.kafkaBrokers.join(','),
  });
  const platform = await startPlatform({
    config,
    bridgePort: 0,
    routerPort: 0,
    cdnPort: 0,
    edgePort: 0,
    serveSubgraphs: false,
    topicPrefix: `t${id}`,
    leaseMs: 2000,
    ...platformOpts,
  });
  const bridgeUrl = platform.bridgeUrl!;
  const routerUrl = platform.routerUrl!;

  const rest: TestPlatform['rest'] = async (method, path, o = {}) => {
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    if (o.key) headers.authorization = `Bearer ${o.key}`;
    let body: string | undefined = o.rawBody;
    if (o.body !== undefined) body = JSON.stringify(o.body);
    if (body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
    const res = await fetch(`${bridgeUrl}${path}`, { method, headers, body });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
  };

  return {
    id,
    platform,
    bridgeUrl,
    routerUrl,
    async createKey(o = {}) {
      const account = o.account ?? uniqueName('acct');
      const created = await platform.services.identity.createApiKey({
        accountSlug: account,
        plan: o.plan ?? 'pro',
        role: o.role,
        scopes: o.scopes,
        mode: o.mode,
      });
      return { key: created.key, accountId: created.accountId, account };
    },
    rest,
    async gql(query, variables = {}, key) {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (key) headers.authorization = `Bearer ${key}`;
      const res = await fetch(routerUrl, { method: 'POST', headers, body: JSON.stringify({ query, variables }) });
      return { status: res.status, ...((await res.json()) as object) };
    },
    async stop() {
      const conn = platform.conn;
      await conn.dropDatabase().catch(() => undefined);
      await platform.stop();
      // A platform that shares another's names leaves them to it.
      if (!shareWith) await dropTopics(`t${id}.`, base.kafkaBrokers);
    },
  };
}

/**
 * Deletes a test platform's topics (its prefix). The broker outlives test runs, and a partition
 * keeps files open: a machine's runs left some 20,000 partitions, past the broker's open-file limit
 * (20,000 here), and it shut down in the middle of a run ("Too many open files").
 */
async function dropTopics(prefix: string, brokers: string[]): Promise<void> {
  const admin = new Kafka({ clientId: 'test-platform-cleanup', brokers, logLevel: logLevel.NOTHING }).admin();
  try {
    await admin.connect();
    const topics = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
    if (topics.length > 0) await admin.deleteTopics({ topics, timeout: 10_000 });
  } catch {
    // a broker that does not answer keeps them
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
