import { z } from 'zod';
import { parseDnsServers } from '../../core/dns/resolver';
import { parseAllowHosts } from '../../core/outbound-http';

/**
 * Settings of the parts of Assets that reach outside systems (custom-domain DNS, connections,
 * migrations), read from the process environment after the stand-ins have filled theirs in.
 */
export const externalSettingsSchema = z.object({
  /** DNS servers for custom-domain TXT checks (`host:port,…`); unset → the local DNS stand-in. */
  ASSETS_DNS_SERVERS: z.string().optional(),
  /** Zone file (JSON, core/dns/stand-in-server.ts) the local DNS stand-in answers from. */
  ASSETS_DNS_ZONE_FILE: z.string().optional(),
  /** Hosts outbound rules let through over plain HTTP (tests: `127.0.0.1`); never on by default. */
  OUTBOUND_ALLOW_HOSTS: z.string().default(''),
  /** Per-request limit when reaching a connection's source, in ms (10 s). */
  ASSETS_CONNECTION_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  /** Pause after each copied migration item, in ms (0; tests slow a run down to kill it mid-way). */
  ASSETS_MIGRATION_ITEM_DELAY_MS: z.coerce.number().int().min(0).default(0),
});
export type ExternalSettings = z.infer<typeof externalSettingsSchema>;

export const externalSettings = (env: Record<string, string | undefined>) => {
  const s = externalSettingsSchema.parse(env);
  return { ...s, dnsServers: parseDnsServers(s.ASSETS_DNS_SERVERS), allowHosts: parseAllowHosts(s.OUTBOUND_ALLOW_HOSTS) };
};
export type ExternalConfig = ReturnType<typeof externalSettings>;
