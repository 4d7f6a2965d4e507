import { Arg, Authorized, Ctx, Int, Mutation, Query, Resolver } from 'type-graphql';
import { badRequest } from '../../core/errors';
import type { RequestContext } from '../../core/subgraph-kit';
import type { AuditService } from './audit';
import type { ChecklistService } from './checklist';
import type { MigrationPlanner } from './migration';
import { MailAuditType, MailChecklistType, MailMigrationGuideType, MailMigrationPlanType } from './types';

/**
 * `download=1` asks for an attachment; `0` or absent does not; anything else is `invalid_audit`.
 * An argument left out of a GraphQL query arrives as `undefined`, not `null`.
 */
function wantsDownload(value: string | null | undefined): boolean {
  if (value === null || value === undefined || value === '' || value === '0') return false;
  if (value === '1') return true;
  throw badRequest('invalid_audit', 'download takes 1 (or 0)', { parameter: 'download' });
}

@Resolver()
export class MailPublicResolver {
  constructor(
    _audit: unknown,
    private readonly mail: { audit: AuditService; checklist: ChecklistService; migration: MigrationPlanner },
  ) {}

  @Query(() => MailAuditType, { description: 'Public domain audit (no authentication).' })
  async mailAudit(
    @Arg('domain', () => String) domain: string,
    @Arg('selectors', () => String, { nullable: true }) selectors: string | null,
    @Arg('download', () => String, { nullable: true, description: '`1` for an attachment' }) download: string | null | undefined,
    // Ignored: the rate limit counts the address the edge saw (ctx.clientIp), never one the caller names.
    @Arg('clientIp', () => String, { nullable: true, deprecationReason: 'ignored: the address comes from the connection' })
    _clientIp: string | null,
    @Ctx() ctx: RequestContext,
  ): Promise<MailAuditType> {
    const asFile = wantsDownload(download);
    const clientIp = ctx.clientIp ?? 'unknown';
    const report = await this.mail.audit.audit({ domain, selectors: selectors ?? undefined, clientIp });
    return { ...report, downloadName: asFile ? 'mail-domain-audit.json' : null };
  }

  @Query(() => MailMigrationPlanType, { description: 'Public migration plan for one provider (no authentication).' })
  async mailMigrationPlan(
    @Arg('domain', () => String) domain: string,
    @Arg('provider', () => String) provider: string,
    @Arg('selectors', () => String, { nullable: true }) selectors: string | null,
    @Arg('download', () => String, { nullable: true, description: '`1` for an attachment' }) download: string | null | undefined,
    @Arg('clientIp', () => String, { nullable: true, deprecationReason: 'ignored: the address comes from the connection' })
    _clientIp: string | null,
    @Ctx() ctx: RequestContext,
  ): Promise<MailMigrationPlanType> {
    const clientIp = ctx.clientIp ?? 'unknown';
    const asFile = wantsDownload(download);
    const plan = await this.mail.migration.plan({
      domain,
      provider,
      selectors: selectors ?? undefined,
      clientIp,
    });
    return { ...plan, downloadName: asFile ? 'mail-migration-plan.json' : null };
  }

  @Query(() => [MailMigrationGuideType], { description: 'Every provider guide (no authentication).' })
  mailMigrationGuides(): MailMigrationGuideType[] {
    return this.mail.migration.guides();
  }

  @Authorized('mail:read')
  @Query(() => MailChecklistType, { description: 'The workspace migration checklist (live keys only).' })
  mailMigrationChecklist(
    @Arg('domain', () => String) domain: string,
    @Arg('provider', () => String) provider: string,
    @Ctx() ctx: RequestContext,
  ): Promise<MailChecklistType> {
    return this.mail.checklist.get(ctx.principal, { domain, provider });
  }

  @Authorized('mail:write')
  @Mutation(() => MailChecklistType, { description: 'Saves checklist progress; a stale revision is a conflict.' })
  updateMailMigrationChecklist(
    @Arg('domain', () => String) domain: string,
    @Arg('provider', () => String) provider: string,
    @Arg('completed', () => [String]) completed: string[],
    @Arg('revision', () => Int) revision: number,
    @Ctx() ctx: RequestContext,
  ): Promise<MailChecklistType> {
    return this.mail.checklist.put(ctx.principal, { domain, provider, completed, revision });
  }
}
