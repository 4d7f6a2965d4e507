import { Arg, Authorized, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import type { OperationDoc } from '../../core/operations/model';
import { OperationType, toOperation } from '../../core/operations/graphql';
import type { RequestContext } from '../../core/subgraph-kit';
import { PUBLISHER_SCOPES } from '../../core/scopes';
import type { RecoveryPointView } from './recovery-points';
import type { PublisherService } from './service';
import {
  CreateSiteInputType,
  CreateSiteResultType,
  NewsletterProviderInputType,
  ProjectRef,
  RecoveryPointResultType,
  RecoveryPointType,
  RuntimeOptionType,
  SiteDomainType,
  SiteHistoryType,
  SiteMailSettingsType,
  SiteMetadataType,
  SiteType,
  StagingResultType,
  UpgradeResultType,
} from './types';

const toPoint = (p: RecoveryPointView): RecoveryPointType => p;
const maybeOperation = (op: OperationDoc | null) => (op ? toOperation(op) : null);

@Resolver()
export class PublisherResolver {
  constructor(private readonly publisher: PublisherService) {}

  @Authorized(PUBLISHER_SCOPES.read)
  @Query(() => [RuntimeOptionType], { description: 'Tested publishing runtime versions.' })
  runtimeOptions(@Ctx() ctx: RequestContext): RuntimeOptionType[] {
    return [...this.publisher.runtimeOptions(ctx.principal)];
  }

  @Authorized(PUBLISHER_SCOPES.read)
  @Query(() => OperationType)
  async siteOperation(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('operationId', () => ID) operationId: string,
    @Ctx() ctx: RequestContext,
  ): Promise<OperationType> {
    return toOperation(await this.publisher.getOperation(ctx.principal, projectId, operationId));
  }

  @Authorized(PUBLISHER_SCOPES.read)
  @Query(() => SiteMetadataType)
  async siteMetadata(@Arg('projectId', () => ID) projectId: string, @Ctx() ctx: RequestContext): Promise<SiteMetadataType> {
    const m = await this.publisher.metadata(ctx.principal, projectId);
    const p = m.process;
    return {
      ...m,
      activeOperation: maybeOperation(m.activeOperation),
      process: p && {
        ...p,
        lastExit: p.lastExit && {
          ...p.lastExit,
          at: new Date(p.lastExit.at),
          reason: p.lastExit.reason === 'oom' ? 'out_of_memory' : null,
        },
        startedAt: p.startedAt ? new Date(p.startedAt) : null,
        sleptAt: p.sleptAt ? new Date(p.sleptAt) : null,
      },
    };
  }

  @Authorized(PUBLISHER_SCOPES.read)
  @Query(() => SiteHistoryType, { description: 'Latest lifecycle operation and recovery points.' })
  async siteHistory(@Arg('projectId', () => ID) projectId: string, @Ctx() ctx: RequestContext): Promise<SiteHistoryType> {
    const h = await this.publisher.history(ctx.principal, projectId);
    return { ...h, activeOperation: maybeOperation(h.activeOperation), latestOperation: maybeOperation(h.latestOperation) };
  }

  @Authorized(PUBLISHER_SCOPES.read)
  @Query(() => [RecoveryPointType], { description: 'Newest first.' })
  async recoveryPoints(@Arg('projectId', () => ID) projectId: string, @Ctx() ctx: RequestContext): Promise<RecoveryPointType[]> {
    return (await this.publisher.listRecoveryPoints(ctx.principal, projectId)).map(toPoint);
  }

  @Authorized(PUBLISHER_SCOPES.read)
  @Query(() => SiteMailSettingsType, { description: 'Transactional sender and newsletter provider, without secrets.' })
  siteMailSettings(@Arg('projectId', () => ID) projectId: string, @Ctx() ctx: RequestContext): Promise<SiteMailSettingsType> {
    return this.publisher.mailSettings(ctx.principal, projectId);
  }

  @Authorized(PUBLISHER_SCOPES.write)
  @Mutation(() => CreateSiteResultType)
  async createSite(
    @Arg('input', () => CreateSiteInputType) input: CreateSiteInputType,
    @Arg('idempotencyKey', () => String, { nullable: true }) idempotencyKey: string | null,
    @Ctx() ctx: RequestContext,
  ): Promise<CreateSiteResultType> {
    const created = await this.publisher.createSite(ctx.principal, input, idempotencyKey);
    return { ...created, operation: toOperation(created.operation) };
  }

  @Authorized(PUBLISHER_SCOPES.write)
  @Mutation(() => OperationType, { description: '`restart`, `start`, `stop` or `retry_provisioning`' })
  async siteAction(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('action', () => String) action: string,
    @Ctx() ctx: RequestContext,
  ): Promise<OperationType> {
    return toOperation(await this.publisher.action(ctx.principal, projectId, action));
  }

  @Authorized(PUBLISHER_SCOPES.write)
  @Mutation(() => SiteDomainType, {
    description:
      'Attaches a custom domain; it waits in `pending_verification` until its TXT token is seen. Posting the same name again checks the record now.',
  })
  setSiteDomain(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('domain', () => String) domain: string,
    @Ctx() ctx: RequestContext,
  ): Promise<SiteDomainType> {
    return this.publisher.setDomain(ctx.principal, projectId, domain);
  }

  @Authorized(PUBLISHER_SCOPES.write)
  @Mutation(() => RecoveryPointResultType)
  async createRecoveryPoint(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('reason', () => String, { nullable: true }) reason: string | null,
    @Ctx() ctx: RequestContext,
  ): Promise<RecoveryPointResultType> {
    const r = await this.publisher.createRecoveryPoint(ctx.principal, projectId, reason);
    return { recoveryPoint: toPoint(r.recoveryPoint), operation: toOperation(r.operation) };
  }

  @Authorized(PUBLISHER_SCOPES.write)
  @Mutation(() => RecoveryPointResultType, { description: 'Restores a completed recovery point.' })
  async restoreRecoveryPoint(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('recoveryPointId', () => ID) recoveryPointId: string,
    @Ctx() ctx: RequestContext,
  ): Promise<RecoveryPointResultType> {
    const r = await this.publisher.restoreRecoveryPoint(ctx.principal, projectId, recoveryPointId);
    return { recoveryPoint: toPoint(r.recoveryPoint), operation: toOperation(r.operation) };
  }

  @Authorized(PUBLISHER_SCOPES.write)
  @Mutation(() => StagingResultType, { description: 'A staging copy from a fresh recovery point.' })
  async createStagingSite(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('name', () => String, { nullable: true }) name: string | null,
    @Ctx() ctx: RequestContext,
  ): Promise<StagingResultType> {
    const r = await this.publisher.createStaging(ctx.principal, projectId, name);
    return { ...r, sourceRecoveryPoint: toPoint(r.sourceRecoveryPoint), operation: toOperation(r.operation) };
  }

  @Authorized(PUBLISHER_SCOPES.write)
  @Mutation(() => UpgradeResultType, { description: 'Upgrades along a catalog edge, after a pre-upgrade recovery point.' })
  async upgradeSite(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('targetVersion', () => String) targetVersion: string,
    @Ctx() ctx: RequestContext,
  ): Promise<UpgradeResultType> {
    const r = await this.publisher.upgrade(ctx.principal, projectId, targetVersion);
    return { ...r, recoveryPoint: toPoint(r.recoveryPoint), operation: toOperation(r.operation) };
  }

  @Authorized(PUBLISHER_SCOPES.write)
  @Mutation(() => SiteMailSettingsType, { description: 'Sets the transactional sender (a verified sender of the account).' })
  setMailSender(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('senderEmail', () => String) senderEmail: string,
    @Ctx() ctx: RequestContext,
  ): Promise<SiteMailSettingsType> {
    return this.publisher.setMailSender(ctx.principal, projectId, senderEmail);
  }

  @Authorized(PUBLISHER_SCOPES.write)
  @Mutation(() => SiteMailSettingsType, { description: 'Configures the newsletter provider; the API key is stored encrypted.' })
  setNewsletterProvider(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('input', () => NewsletterProviderInputType) input: NewsletterProviderInputType,
    @Ctx() ctx: RequestContext,
  ): Promise<SiteMailSettingsType> {
    return this.publisher.setNewsletterProvider(ctx.principal, projectId, input);
  }

  @Authorized(PUBLISHER_SCOPES.write)
  @Mutation(() => SiteMailSettingsType, { description: 'Removes the newsletter mapping and its encrypted configuration.' })
  deleteNewsletterProvider(
    @Arg('projectId', () => ID) projectId: string,
    @Ctx() ctx: RequestContext,
  ): Promise<SiteMailSettingsType> {
    return this.publisher.deleteNewsletterProvider(ctx.principal, projectId);
  }
}

@Resolver(() => ProjectRef)
export class ProjectSiteResolver {
  constructor(private readonly publisher: PublisherService) {}

  @FieldResolver(() => SiteType, { nullable: true, description: 'The publishing site hosted in this project.' })
  async site(@Root() project: ProjectRef, @Ctx() ctx: RequestContext): Promise<SiteType | null> {
    const found = await this.publisher.siteForProject(ctx.principal, project.id);
    if (!found) return null;
    const { site, status } = found;
    return {
      projectId: site._id,
      name: site.name,
      status,
      runtimeVersion: site.runtimeVersion,
      siteUrl: site.siteUrl,
      adminUrl: site.adminUrl,
      domain: site.domain,
      deploymentMode: site.deploymentMode,
      mailEnabled: site.mailEnabled,
      createdAt: site.createdAt,
    };
  }
}
