import { z } from 'zod';

/** The publishing area's settings, parsed from the environment by the area kit. */
export const publisherSettings = z.object({
  /** Publishing feature flag for this environment; when false the publisher routes answer 404. */
  PUBLISHER_ENABLED: z
    .enum(['true', 'false', '1', '0'])
    .default('true')
    .transform((v) => v === 'true' || v === '1'),
  /** Domain under which hosted sites get their address: https://<slug>.<SITES_DOMAIN>. */
  SITES_DOMAIN: z.string().default('sites.localhost'),
  /** Step delay of the simulated infrastructure executor, in milliseconds. */
  SIMULATED_STEP_DELAY_MS: z.coerce.number().int().min(0).default(600),
});

export type PublisherSettings = z.infer<typeof publisherSettings>;
