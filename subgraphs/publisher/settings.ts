import { z } from 'zod';
import { nodeSleepSettings } from '../../dataplane/sleep';

/** The publishing area's settings, parsed from the environment by the area kit. */
export const publisherSettings = z.object({
  /** Publishing feature flag for this environment; when false the publisher routes answer 404. */
  PUBLISHER_ENABLED: z
    .enum(['true', 'false', '1', '0'])
    .default('true')
    .transform((v) => v === 'true' || v === '1'),
  /** Domain under which hosted sites get their address: https://<slug>.<SITES_DOMAIN>. */
  SITES_DOMAIN: z.string().default('sites.localhost'),
  /** DNS servers (`host:port,…`) for the custom-domain TXT check; unset means the system's resolvers. */
  PUBLISHER_DNS_SERVERS: z.string().optional(),
  /** How long an unverified custom-domain claim holds its name, in ms (default 7 days). */
  PUBLISHER_DOMAIN_CLAIM_TTL_MS: z.coerce
    .number()
    .int()
    .min(1000)
    .default(7 * 24 * 3600_000),
  /** How often the sweeper re-checks pending domains' TXT records, in ms. */
  PUBLISHER_DOMAIN_CHECK_INTERVAL_MS: z.coerce.number().int().min(100).default(60_000),
  /**
   * Which executor runs site operations: `real` (Ghost from the runtime cache, supervised, served by
   * the edge; docs/decisions/0120-data-plane.md) or `simulated` (timed stand-in steps that tests
   * can make fail). Tests start with `simulated` unless they ask for `real` (test/support/platform.ts).
   */
  PUBLISHER_EXECUTOR: z.enum(['real', 'simulated']).default('real'),
  /** Where recovery points keep their bytes: `fs` (default, `PUBLISHER_BACKUP_DIR`) or `s3` (docs/decisions/0150). */
  PUBLISHER_BACKUP_STORE: z.enum(['fs', 's3']).default('fs'),
  /**
   * A MySQL admin URL (`mysql://root:pw@127.0.0.1:3307/`): new sites get a database `site_<id>` and a
   * user of their own there instead of the embedded SQLite file (docs/decisions/0220-mysql-adapter.md).
   */
  PUBLISHER_MYSQL_URL: z.string().url().optional(),
  /** The filesystem store's root (default `<DATA_DIR>/site-backups`). */
  PUBLISHER_BACKUP_DIR: z.string().optional(),
  PUBLISHER_BACKUP_S3_ENDPOINT: z.string().optional(),
  PUBLISHER_BACKUP_S3_REGION: z.string().default('us-east-1'),
  PUBLISHER_BACKUP_S3_BUCKET: z.string().default('site-backups'),
  PUBLISHER_BACKUP_S3_PREFIX: z.string().default(''),
  PUBLISHER_BACKUP_S3_ACCESS_KEY_ID: z.string().optional(),
  PUBLISHER_BACKUP_S3_SECRET_ACCESS_KEY: z.string().optional(),
  /**
   * How long a connected-node site's step waits for its unreachable node before the operation fails
   * with `node_unreachable`, in ms (default 10 min; docs/decisions/0170-node-agent.md).
   */
  PUBLISHER_NODE_WAIT_MS: z.coerce
    .number()
    .int()
    .min(1000)
    .default(10 * 60_000),
  /**
   * How long a finished node task (`publisher_node_tasks`) is kept, in ms (default 1 h): a sweep
   * every min(this, 5 min) deletes older ones, except an operation's still under way
   * (docs/decisions/0270-node-tokens-and-task-secrets.md).
   */
  PUBLISHER_NODE_TASK_RETENTION_MS: z.coerce.number().int().min(1000).default(3_600_000),
  /**
   * With the real executor, hosted sites run through the hosted node (docs/decisions/0225-hosted-pool-node.md):
   * `in-process` (default) starts its agent in each process that runs the data plane; `external`
   * leaves it to a `platform nodes agent` run with the hosted node's token (`nodes rotate-token --node hosted`
   * prints one; docs/decisions/0270-node-tokens-and-task-secrets.md). That agent runs commerce
   * releases too: it reads their bundles and environments, and hosted sites' extras, through the
   * agent API as the in-process one does (decision 0365), and hosted sites' data steps, sending and
   * fetching recovery points' parts through it (decision 0375).
   */
  PUBLISHER_HOSTED_AGENT: z.enum(['in-process', 'external']).default('in-process'),
  /** `PUBLISHER_NODE_MEMORY_MB` and `PUBLISHER_IDLE_SLEEP_MS`: declared with the node's sleep (dataplane/sleep.ts). */
  ...nodeSleepSettings.shape,
  /** Step delay of the simulated infrastructure executor, in milliseconds. */
  SIMULATED_STEP_DELAY_MS: z.coerce.number().int().min(0).default(600),
});

export type PublisherSettings = z.infer<typeof publisherSettings>;
