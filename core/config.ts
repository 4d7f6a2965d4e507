import path from 'node:path';
import { z } from 'zod';
import { resolveKeys } from './keys';
import { projectRoot } from './paths';

/**
 * The platform's configuration, parsed once from the environment. Every process (all-in-one or a
 * single piece) reads the same variables; docker-compose sets them the same way.
 */
const schema = z.object({
  NODE_ENV: z.string().default('development'),
  /** When set, that MongoDB is used as given and no local MongoDB-wire server is started. */
  MONGODB_URI: z.string().optional(),
  /** Comma-separated; when set, that Kafka is used as given and no local broker is started. */
  KAFKA_BROKERS: z.string().optional(),
  MONGODB_PORT: z.coerce.number().int().default(27017),
  KAFKA_PORT: z.coerce.number().int().default(9092),
  KAFKA_CONTROLLER_PORT: z.coerce.number().int().default(9093),
  /** Where local engine data, logs and download caches live (git-ignored). */
  DATA_DIR: z.string().default('.data'),
  HOST: z.string().default('127.0.0.1'),
  BRIDGE_PORT: z.coerce.number().int().default(8080),
  ROUTER_PORT: z.coerce.number().int().default(4000),
  CDN_PORT: z.coerce.number().int().default(8081),
  /** The edge: the listener that serves hosted sites by `Host` (dataplane/edge.ts). */
  EDGE_PORT: z.coerce.number().int().min(0).max(65535).default(8082),
  /**
   * A hosted site's public address with `{slug}`, e.g. `https://{slug}.sites.example.com/`. Unset:
   * `http://{slug}.sites.localhost:<EDGE_PORT>/` (the port the edge listens on).
   */
  SITES_BASE_URL: z
    .string()
    .refine((v) => v.includes('{slug}'), 'must contain {slug}')
    .optional(),
  /** First port of the subgraphs; each subgraph takes the next one in a fixed order. */
  SUBGRAPH_BASE_PORT: z.coerce.number().int().default(4101),
  /** Public addresses used when building URLs that users follow. */
  BASE_URL: z.string().optional(),
  /**
   * Proxies in front of the bridge whose `X-Forwarded-For` is believed (comma-separated addresses or
   * CIDRs, as Fastify's `trustProxy` takes them); unset: the socket's address is the client's.
   */
  TRUST_PROXY: z.string().optional(),
  CDN_URL: z.string().optional(),
  /**
   * HMAC key that signs the principal header between router and subgraphs. No default: see
   * core/keys.ts (generated into the data folder in development, required in production).
   */
  INTERNAL_SIGNING_KEY: z.string().min(16).optional(),
  /** 32-byte key (hex or base64) for AES-256-GCM secret encryption at rest (core/keys.ts). */
  SECRET_ENCRYPTION_KEY: z.string().optional(),
  /**
   * Earlier encryption keys, comma-separated, still accepted for reading after a rotation (each
   * sealed value names the key id it was sealed with; core/secrets.ts).
   */
  SECRET_ENCRYPTION_OLD_KEYS: z.string().optional(),
  /** HMAC key for opaque cursors (core/keys.ts). */
  CURSOR_SIGNING_KEY: z.string().min(16).optional(),
  LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
  /** Lease of a claimed operation, in milliseconds (heartbeats renew it). */
  OPERATION_LEASE_MS: z.coerce.number().int().min(100).default(15000),
  /** Abort deadline of one operation step, in milliseconds (core/operations/engine.ts): 5 min. */
  OPERATION_STEP_TIMEOUT_MS: z.coerce.number().int().min(10).default(300_000),
  /** Overall deadline of one operation from its enqueue, in milliseconds: 1 h. */
  OPERATION_DEADLINE_MS: z.coerce.number().int().min(10).default(3_600_000),
  /**
   * A finished operation moves from the hot `operations` collection to `operations_archive` this
   * long after it finished (core/operations/archive.ts): 10 min. Reads find it in either.
   */
  OPERATION_ARCHIVE_AFTER_MS: z.coerce.number().int().min(0).default(600_000),
  /**
   * Lease of an `in_progress` idempotency key, in milliseconds (renewed while the request runs); a
   * retry after a crash takes the key over once it lapses (core/idempotency.ts).
   */
  IDEMPOTENCY_LEASE_MS: z.coerce.number().int().min(100).default(10000),
  KAFKA_TOPIC_PREFIX: z.string().default('platform'),
  /** Requests per minute per API key on the bridge and on the router (429 beyond it). */
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(600),
  /** Failed authentications per minute per client address on the bridge and on the router (429 beyond it). */
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(1).default(30),
  /** graphql-ws connections one key may hold open on one router (4429 beyond it). */
  GRAPHQL_WS_MAX_CONNECTIONS_PER_KEY: z.coerce.number().int().min(1).default(1000),
  /** Live graphql-ws subscriptions one key may hold on one router (429 `too_many_subscriptions` beyond it). */
  GRAPHQL_WS_MAX_SUBSCRIPTIONS_PER_KEY: z.coerce.number().int().min(1).default(5000),
});

export type Config = Omit<z.infer<typeof schema>, 'INTERNAL_SIGNING_KEY' | 'SECRET_ENCRYPTION_KEY' | 'CURSOR_SIGNING_KEY'> & {
  INTERNAL_SIGNING_KEY: string;
  SECRET_ENCRYPTION_KEY: string;
  CURSOR_SIGNING_KEY: string;
  mongodbUri: string;
  kafkaBrokers: string[];
  /** True when the engines are external (given by env) and must not be started locally. */
  externalMongo: boolean;
  externalKafka: boolean;
  baseUrl: string;
  cdnUrl: string;
  /** The environment this was parsed from: areas parse their own settings from it. */
  env: Record<string, string | undefined>;
};

/** The settings an empty environment gives (ports and the like), without resolving any key. */
export function configDefaults(): z.infer<typeof schema> {
  return schema.parse({});
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`invalid configuration: ${problems}`);
  }
  const c = parsed.data;
  const keys = resolveKeys(c, {
    production: c.NODE_ENV === 'production',
    keysDir: path.resolve(projectRoot(), c.DATA_DIR, 'keys'),
  });
  return {
    ...c,
    ...keys,
    mongodbUri: c.MONGODB_URI ?? `mongodb://127.0.0.1:${c.MONGODB_PORT}/platform`,
    kafkaBrokers: (c.KAFKA_BROKERS ?? `127.0.0.1:${c.KAFKA_PORT}`).split(',').map((s) => s.trim()),
    externalMongo: Boolean(c.MONGODB_URI),
    externalKafka: Boolean(c.KAFKA_BROKERS),
    baseUrl: c.BASE_URL ?? `http://${c.HOST}:${c.BRIDGE_PORT}`,
    cdnUrl: c.CDN_URL ?? `http://${c.HOST}:${c.CDN_PORT}`,
    env: { ...env },
  };
}

let cached: Config | undefined;
/** The process-wide configuration (parsed on first use). */
export function config(): Config {
  cached ??= loadConfig();
  return cached;
}
/** Tests and the CLI can replace the process configuration. */
export function setConfig(c: Config): void {
  cached = c;
}
