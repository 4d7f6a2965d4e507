import { badRequest } from '../../core/errors';
import type { AuditService } from './audit';

/**
 * Migration guides and the plan built from them (spec 4.8 rules 2 and 8). Provider names are the
 * spec's neutral words; each guide says what changes in authentication, the sender, the API call,
 * webhooks and DNS. `source` and `verifiedAt` identify the guide release (spec 9.6).
 */
export const PROVIDERS = ['provider_a', 'provider_b', 'provider_c', 'provider_d', 'provider_e', 'provider_f', 'smtp'] as const;
export type Provider = (typeof PROVIDERS)[number];

/** Spec 3.7: the checklist's step ids, in order. */
export const STEP_IDS = [
  'audit',
  'add_domain',
  'coexist',
  'verify',
  'test',
  'controlled_send',
  'switch',
  'monitor',
  'retire',
] as const;
export type StepId = (typeof STEP_IDS)[number];

/** The guide release these texts belong to. */
export const GUIDE_SOURCE = 'platform-mail-migration-guides@2026.11';
export const GUIDE_VERIFIED_AT = new Date('2026-11-01T00:00:00Z');

export interface Guide {
  provider: Provider;
  name: string;
  authentication: string;
  sender: string;
  apiChange: string;
  webhookChange: string;
  dnsChange: string;
  source: string;
  verifiedAt: Date;
}

const API_CHANGE =
  'Send with POST /v1/mail/send: map the sender to from, recipients to to, cc and bcc, and keep subject, html and text. Recreate templates, variables and streams on the platform; replace configuration-set behaviour with streams, tags and webhooks.';
const WEBHOOK_CHANGE =
  'Create a new signed platform webhook (Standard Webhooks signatures) instead of reusing the provider signature check, and keep the old webhook active until in-flight messages have settled.';
const DNS_CHANGE =
  'Add the platform include to the one SPF record (never a second record), publish the DKIM and return-path records shown after adding the domain, and keep existing mailbox MX records.';

function apiGuide(provider: Provider, name: string, auth: string, attachments: string): Guide {
  return {
    provider,
    name,
    authentication: `Replace the ${name} ${auth} with a platform bearer key (Authorization: Bearer <API_KEY>). Provider credentials do not transfer.`,
    sender: `Verify each sending address on the platform (platform senders verify); ${name} sender identities, accounts and mailboxes do not transfer.`,
    apiChange: `${API_CHANGE} ${attachments}`,
    webhookChange: WEBHOOK_CHANGE,
    dnsChange: DNS_CHANGE,
    source: GUIDE_SOURCE,
    verifiedAt: GUIDE_VERIFIED_AT,
  };
}

const MULTIPART = 'Attachments sent as multipart uploads become Assets ids passed in attachments.';
const INLINE = 'Attachments are uploaded to Assets first and passed by id.';

export const GUIDES: Record<Provider, Guide> = {
  provider_a: apiGuide('provider_a', 'Provider A', 'API key header', MULTIPART),
  provider_b: apiGuide('provider_b', 'Provider B', 'basic-auth API key', MULTIPART),
  provider_c: apiGuide('provider_c', 'Provider C', 'server token header', INLINE),
  provider_d: apiGuide('provider_d', 'Provider D', 'signed access-key requests', INLINE),
  provider_e: apiGuide('provider_e', 'Provider E', 'bearer API key', INLINE),
  provider_f: apiGuide('provider_f', 'Provider F', 'API key and secret pair', MULTIPART),
  smtp: {
    provider: 'smtp',
    name: 'SMTP relay',
    authentication:
      'Update the SMTP host and credentials to the platform relay, use TLS (STARTTLS on 587 or implicit TLS on 465) and keep certificate verification on. Or move to POST /v1/mail/send with a bearer key.',
    sender: 'Verify each envelope and header sender address on the platform (platform senders verify).',
    apiChange: `${API_CHANGE} MIME attachments become Assets ids when moving to the JSON API.`,
    webhookChange: WEBHOOK_CHANGE,
    dnsChange: DNS_CHANGE,
    source: GUIDE_SOURCE,
    verifiedAt: GUIDE_VERIFIED_AT,
  },
};

export function parseProvider(input: unknown): Provider {
  if (typeof input === 'string' && (PROVIDERS as readonly string[]).includes(input)) return input as Provider;
  throw badRequest('invalid_provider', `provider must be one of ${PROVIDERS.join(', ')}`, { allowed: [...PROVIDERS] });
}

export interface PlanStep {
  id: StepId;
  title: string;
  action: string;
}

function steps(provider: Provider, domain: string, spfProposal: string | null): PlanStep[] {
  const g = GUIDES[provider];
  const spf = spfProposal
    ? `publish this SPF record in place of the current one: ${spfProposal}`
    : 'resolve the SPF review items from the audit by hand before adding the platform include';
  return [
    { id: 'audit', title: 'Audit the domain', action: `Review the records below for ${domain}; ${spf}.` },
    {
      id: 'add_domain',
      title: 'Add the sending domain',
      action: `Add ${domain} in an authenticated workspace to get its exact DKIM and return-path records.`,
    },
    {
      id: 'coexist',
      title: 'Run both side by side',
      action: `Publish the DKIM and return-path records next to ${g.name}'s; keep MX records and the old integration running.`,
    },
    {
      id: 'verify',
      title: 'Verify DNS and senders',
      action: 'Wait until the domain verifies and each sender address is verified on the platform.',
    },
    {
      id: 'test',
      title: 'Send with a test key',
      action: 'Call POST /v1/mail/send with a test-mode key: messages are recorded, never delivered.',
    },
    {
      id: 'controlled_send',
      title: 'Send a small share',
      action: 'Move one stream or a small share of traffic to a live key and watch events and webhook deliveries.',
    },
    {
      id: 'switch',
      title: 'Switch traffic',
      action: `Send everything through the platform; keep the ${g.name} webhook for in-flight messages.`,
    },
    {
      id: 'monitor',
      title: 'Monitor',
      action: 'Watch bounces, complaints, suppressions and webhook delivery failures for at least a week.',
    },
    {
      id: 'retire',
      title: 'Retire the old provider',
      action: `Remove ${g.name} credentials, its DNS records and its webhook once nothing is in flight.`,
    },
  ];
}

export function planFor(provider: Provider, domain: string, spfProposal: string | null) {
  const guide = GUIDES[provider];
  const example = [
    'curl -X POST "$BASE_URL/v1/mail/send" \\',
    '  -H "Authorization: Bearer $API_KEY" -H "Content-Type: application/json" \\',
    `  -d '{"from":"hello@${domain}","to":["user@example.net"],"cc":[],"bcc":[],"subject":"Hello","html":"<p>Hello</p>","text":"Hello","tags":["migration"]}'`,
  ].join('\n');
  const sdkExample = [
    `const res = await fetch(\`\${process.env.BASE_URL}/v1/mail/send\`, {`,
    "  method: 'POST',",
    "  headers: { Authorization: `Bearer ${process.env.API_KEY}`, 'Content-Type': 'application/json' },",
    `  body: JSON.stringify({ from: 'hello@${domain}', to: ['user@example.net'], subject: 'Hello', html: '<p>Hello</p>', text: 'Hello', attachments: [] /* Assets ids */ }),`,
    '});',
    'const { data } = await res.json(); // { id, status }',
  ].join('\n');
  return {
    guide,
    steps: steps(provider, domain, spfProposal),
    rollback: [
      `Point sending back at ${guide.name}: its credentials, DNS records and webhook stay in place until the retire step.`,
      'Restore the previous SPF record if the merged one was published and something fails.',
      'The platform webhook can be disabled without affecting the old integration.',
    ],
    example,
    sdkExample,
    contactMigration:
      'Credentials, accounts, mailboxes, message history and templates do not transfer. Export suppression and unsubscribe lists from the old provider and recreate templates, variables and streams on the platform before switching.',
  };
}

/** The migration guides and plans: the audit (same limits and cache) plus a provider's guide and steps. */
export class MigrationPlanner {
  constructor(private readonly audit: AuditService) {}

  guides(): Guide[] {
    return PROVIDERS.map((p) => GUIDES[p]);
  }

  /** The audit plus the provider's guide and steps; `invalid_provider` first. */
  async plan(input: { domain: unknown; provider: unknown; selectors?: unknown; clientIp: string }) {
    const provider = parseProvider(input.provider);
    const report = await this.audit.audit(input);
    return { ...report, ...planFor(provider, report.domain, report.spf.proposed) };
  }
}
