import { Arg, Ctx, Float, Mutation, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../core/subgraph-kit';
import type { BillingService } from './service';
import {
  AiCreditBalanceType,
  AiCreditCheckoutType,
  AiCreditFundingType,
  AiCreditQuoteType,
  AiCreditUsagePageType,
} from './types';
import { toBalance, toCheckout, toEntry, toFunding, toQuote } from './views';

@Resolver()
export class BillingResolver {
  constructor(private readonly billing: BillingService) {}

  @Query(() => AiCreditBalanceType, { description: "The billing owner's AI-credit balance." })
  async aiCreditBalance(@Ctx() ctx: RequestContext): Promise<AiCreditBalanceType> {
    return toBalance(await this.billing.balance(ctx.principal));
  }

  @Query(() => AiCreditUsagePageType, { description: 'Usage entries, newest first.' })
  async aiCreditUsage(
    @Ctx() ctx: RequestContext,
    @Arg('product', () => String, { nullable: true }) product?: string,
    @Arg('from', () => String, { nullable: true }) from?: string,
    @Arg('to', () => String, { nullable: true }) to?: string,
    @Arg('source', () => String, { nullable: true }) source?: string,
    @Arg('limit', () => Float, { nullable: true }) limit?: number,
    @Arg('cursor', () => String, { nullable: true }) cursor?: string,
  ): Promise<AiCreditUsagePageType> {
    const page = await this.billing.usage(ctx.principal, { product, from, to, source, limit, cursor });
    return { items: page.items.map(toEntry), nextCursor: page.nextCursor };
  }

  @Query(() => AiCreditFundingType)
  async aiCreditFunding(@Ctx() ctx: RequestContext): Promise<AiCreditFundingType> {
    return toFunding(await this.billing.fundingPreferences(ctx.principal));
  }

  @Mutation(() => AiCreditQuoteType)
  async createAiCreditQuote(
    @Arg('credits', () => Float) credits: number,
    @Arg('currency', () => String) currency: string,
    @Ctx() ctx: RequestContext,
  ): Promise<AiCreditQuoteType> {
    return toQuote(await this.billing.quote(ctx.principal, credits, currency));
  }

  @Mutation(() => AiCreditCheckoutType, { description: 'Exactly once per idempotency key.' })
  async createAiCreditCheckout(
    @Arg('quoteId', () => String) quoteId: string,
    @Arg('idempotencyKey', () => String) idempotencyKey: string,
    @Arg('provider', () => String) provider: string,
    @Ctx() ctx: RequestContext,
  ): Promise<AiCreditCheckoutType> {
    return toCheckout(await this.billing.checkout(ctx.principal, { quoteId, idempotencyKey, provider }));
  }

  @Mutation(() => AiCreditFundingType)
  async setAiCreditFunding(
    @Arg('product', () => String) product: string,
    @Arg('mode', () => String) mode: string,
    @Ctx() ctx: RequestContext,
  ): Promise<AiCreditFundingType> {
    return toFunding(await this.billing.setFunding(ctx.principal, product, mode));
  }
}
