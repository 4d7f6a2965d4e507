import { GraphQLJSON } from 'graphql-scalars';
import { Arg, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../core/subgraph-kit';
import type { ConnectionView, EnvironmentView } from './connections';
import type { EnvironmentBody } from './environment-fields';
import type { CommerceService } from './service';
import {
  CommerceAnalyticsType,
  CommerceConnectInput,
  CommerceConnectionType,
  CommerceEnvironmentInput,
  CommerceEnvironmentType,
  CommerceOperationType,
  CommerceReleasePageType,
  CommerceReleaseType,
  CommerceStorefrontSettingsType,
  CommerceWebhookPageType,
  CommerceWebhookType,
} from './types';

const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const camel = (s: string) => s.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

export function environmentType(e: EnvironmentView): CommerceEnvironmentType {
  const fields = Object.fromEntries(Object.entries(e.fields).map(([k, v]) => [camel(k), v]));
  return {
    configPath: null,
    configName: null,
    appUrl: null,
    clientId: null,
    scopes: null,
    storefrontId: null,
    customerAccountClientId: null,
    customerAccountUrl: null,
    ...fields,
    name: e.name,
    hasClientSecret: e.has.client_secret,
    hasAutomationToken: e.has.automation_token,
    hasPublicStorefrontToken: e.has.public_storefront_token,
    hasPrivateStorefrontToken: e.has.private_storefront_token,
    hasCustomerAccountSecret: e.has.customer_account_secret,
    hasSessionSecret: e.has.session_secret,
    memoryMb: e.memoryMb,
    verification: e.verification,
    revision: e.revision,
    createdAt: e.createdAt,
    updatedAt: e.updatedAt,
  };
}

const connectionType = (c: ConnectionView): CommerceConnectionType => ({
  ...c,
  id: c.projectId,
  environments: c.environments.map(environmentType),
});

/** Thin: read the principal, call the service, shape the answer. */
@Resolver()
export class CommerceResolver {
  constructor(private readonly commerce: CommerceService) {}

  @Query(() => CommerceConnectionType, { description: "The project's commerce connection." })
  async commerceConnection(@Arg('projectId', () => ID) projectId: string, @Ctx() ctx: RequestContext) {
    return connectionType(await this.commerce.connection(ctx.principal, projectId));
  }

  @Query(() => CommerceOperationType)
  commerceOperation(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('operationId', () => ID) operationId: string,
    @Ctx() ctx: RequestContext,
  ) {
    return this.commerce.operation(ctx.principal, projectId, operationId);
  }

  @Query(() => CommerceReleasePageType, { description: 'Newest first.' })
  commerceReleases(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('limit', () => Int, { nullable: true }) limit: number | null,
    @Arg('cursor', () => String, { nullable: true }) cursor: string | null,
    @Ctx() ctx: RequestContext,
  ) {
    return this.commerce.listReleases(ctx.principal, projectId, limit, cursor);
  }

  @Query(() => CommerceWebhookPageType, { description: 'Newest first.' })
  commerceWebhooks(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('limit', () => Int, { nullable: true }) limit: number | null,
    @Arg('cursor', () => String, { nullable: true }) cursor: string | null,
    @Ctx() ctx: RequestContext,
  ) {
    return this.commerce.listWebhooks(ctx.principal, projectId, limit, cursor);
  }

  @Query(() => CommerceWebhookType)
  commerceWebhook(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('webhookId', () => ID) webhookId: string,
    @Ctx() ctx: RequestContext,
  ) {
    return this.commerce.webhook(ctx.principal, projectId, webhookId);
  }

  @Query(() => CommerceAnalyticsType, { description: '`1h`, `24h`, `7d` or `30d`; anything else is `7d`.' })
  commerceAnalytics(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('range', () => String, { nullable: true }) range: string | null,
    @Ctx() ctx: RequestContext,
  ) {
    return this.commerce.analytics(ctx.principal, projectId, range);
  }

  @Mutation(() => CommerceOperationType, { description: 'Connects an app or a storefront; a queued operation.' })
  commerceConnect(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('input', () => CommerceConnectInput) input: CommerceConnectInput,
    @Arg('idempotencyKey', () => String, { nullable: true }) idempotencyKey: string | null,
    @Ctx() ctx: RequestContext,
  ) {
    return this.commerce.connect(ctx.principal, projectId, input, idempotencyKey);
  }

  @Mutation(() => CommerceEnvironmentType, { description: 'Write-only credentials: omitted or empty secrets are kept.' })
  async commercePutEnvironment(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('environment', () => String) environment: string,
    @Arg('input', () => CommerceEnvironmentInput) input: CommerceEnvironmentInput,
    @Ctx() ctx: RequestContext,
  ) {
    const body: EnvironmentBody = {};
    for (const [k, v] of Object.entries(input)) if (v !== undefined) body[snake(k)] = v;
    return environmentType(await this.commerce.putEnvironment(ctx.principal, projectId, environment, body));
  }

  @Mutation(() => CommerceOperationType, { description: 'Checks the credentials against the commerce platform.' })
  commerceVerify(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('environment', () => String) environment: string,
    @Arg('idempotencyKey', () => String, { nullable: true }) idempotencyKey: string | null,
    @Ctx() ctx: RequestContext,
  ) {
    return this.commerce.verify(ctx.principal, projectId, environment, idempotencyKey);
  }

  @Mutation(() => CommerceReleaseType, { description: 'Only a failed or degraded release.' })
  commerceRetryRelease(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('releaseId', () => ID) releaseId: string,
    @Ctx() ctx: RequestContext,
  ) {
    return this.commerce.retryRelease(ctx.principal, projectId, releaseId);
  }

  @Mutation(() => CommerceReleaseType, {
    description: 'A release of a bundle already in the artifact store (its SHA-256), run on the data plane',
  })
  commerceCreateRelease(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('environment', () => String) environment: string,
    @Arg('artifact', () => String) artifact: string,
    @Ctx() ctx: RequestContext,
  ) {
    return this.commerce.createRelease(ctx.principal, projectId, environment, artifact);
  }

  @Mutation(() => CommerceStorefrontSettingsType)
  commercePutStorefrontSettings(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('settings', () => GraphQLJSON) settings: unknown,
    @Ctx() ctx: RequestContext,
  ) {
    return this.commerce.putStorefrontSettings(ctx.principal, projectId, settings);
  }

  @Mutation(() => CommerceReleaseType, { description: 'Promotes a healthy preview to production.' })
  commercePromote(
    @Arg('projectId', () => ID) projectId: string,
    @Arg('previewId', () => String) previewId: string,
    @Ctx() ctx: RequestContext,
  ) {
    return this.commerce.promote(ctx.principal, projectId, previewId);
  }
}
