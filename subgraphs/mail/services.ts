import type { Connection } from 'mongoose';
import type { DnsResolver } from '../../core/dns/resolver';
import { AuditService } from './audit';
import { ChecklistService, checklistModel } from './checklist';
import { GUIDES, type Guide, parseProvider, planFor, PROVIDERS } from './migration';

/** Everything the mail area's resolvers call. */
export class MailServices {
  readonly audit: AuditService;
  readonly checklist: ChecklistService;

  constructor(deps: { conn: Connection; resolver: DnsResolver; platformSpfDomain: string }) {
    this.audit = new AuditService({ resolver: deps.resolver, platformSpfDomain: deps.platformSpfDomain });
    this.checklist = new ChecklistService(checklistModel(deps.conn));
  }

  guides(): Guide[] {
    return PROVIDERS.map((p) => GUIDES[p]);
  }

  /** The audit (same limits and cache) plus the provider's guide and steps; `invalid_provider` first. */
  async migrationPlan(input: { domain: unknown; provider: unknown; selectors?: unknown; clientIp: string }) {
    const provider = parseProvider(input.provider);
    const report = await this.audit.audit(input);
    return { ...report, ...planFor(provider, report.domain, report.spf.proposed) };
  }
}
