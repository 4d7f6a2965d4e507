import { Arg, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import type { OperationDoc } from '../../core/operations/model';
import type { RequestContext } from '../../core/subgraph-kit';
import type { PublisherService } from './service';
import {
  CreateSiteInput,
  CreateSiteResultType,
  OperationType,
  ProjectRef,
  RuntimeOptionType,
  SiteMetadataType,
  SiteType,
} from './types';

export const toOperation = (op: OperationDoc): OperationType => ({
  id: op._id,
  projectId: op.projectId,
  resourceType: op.resourceType,
  resourceId: op.resourceId,
  operationType: op.operationType,
  status: op.status,
  step: op.step,
  steps: (op.steps ?? []).map((s) => ({
    id: s.id,
    status: s.status,
    startedAt: s.startedAt ?? null,
    finishedAt: s.finishedAt ?? null,
    attempts: s.attempts ?? 1,
  })),
  attempt: op.attempt ?? 0,
  maxAttempts: op.maxAttempts,
  errorCode: op.errorCode ?? null,
  errorMessage: op.errorMessage ?? null,
  result: op.result ?? null,
  createdAt: op.createdAt,
  updatedAt: op.updatedAt,
  startedAt: op.startedAt ?? null,
  finishedAt: op.finishedAt ?? null,
});

@Resolver()
export class PublisherResolver {
  constructor(private readonly publisher: PublisherService) {}

  @Query(() => [RuntimeOptionType], { description: 'Tested publishing runtime versions.' })
  runtimeOptions(@Ctx() ctx: RequestContext): RuntimeOptionType[] {
    return [...this.publisher.runtimeOptions(ctx.principal)];
  }

  @Query(() => OperationType)
  async siteOperation(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('operationId', () => ID) operationId: string,
    @Ctx() ctx: RequestContext,
  ): Promise<OperationType> {
    return toOperation(await this.publisher.getOperation(ctx.principal, projectId, operationId));
  }

  @Query(() => SiteMetadataType)
  async siteMetadata(@Arg('projectId', () => ID) projectId: string, @Ctx() ctx: RequestContext): Promise<SiteMetadataType> {
    const m = await this.publisher.metadata(ctx.principal, projectId);
    return { ...m, activeOperation: m.activeOperation ? toOperation(m.activeOperation) : null };
  }

  @Mutation(() => CreateSiteResultType)
  async createSite(
    @Arg('input', () => CreateSiteInput) input: CreateSiteInput,
    @Arg('idempotencyKey', () => String, { nullable: true }) idempotencyKey: string | null,
    @Ctx() ctx: RequestContext,
  ): Promise<CreateSiteResultType> {
    const created = await this.publisher.createSite(ctx.principal, input, idempotencyKey);
    return { ...created, operation: toOperation(created.operation) };
  }

  @Mutation(() => OperationType, { description: '`restart`, `start`, `stop` or `retry_provisioning`' })
  async siteAction(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('action', () => String) action: string,
    @Ctx() ctx: RequestContext,
  ): Promise<OperationType> {
    return toOperation(await this.publisher.action(ctx.principal, projectId, action));
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
