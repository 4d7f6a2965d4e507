import { Field, Float, ID, Int, ObjectType } from 'type-graphql';

@ObjectType('AiCreditBalance', { description: "The billing owner's AI credits in the current UTC month." })
export class AiCreditBalanceType {
  @Field(() => ID) accountId!: string;
  @Field(() => String, { description: '`free` or `pro`: the plan whose allocation this month got' }) plan!: string;
  @Field(() => Int, { description: 'credits that can be drawn now' }) available!: number;
  @Field(() => Int, { description: "this month's plan allocation" }) allocation!: number;
  @Field(() => Int, { description: 'managed usage drawn this month' }) usedThisPeriod!: number;
  @Field(() => Int, { description: 'byok usage metered this month (draws nothing)' }) byokUsedThisPeriod!: number;
  @Field(() => Int, { description: 'top-ups credited this month' }) topUps!: number;
  @Field(() => Int, { description: 'top-ups and adjustments carried in from earlier months' }) carriedOver!: number;
  @Field(() => Int) adjustments!: number;
  @Field(() => Date) periodStart!: Date;
  @Field(() => Date, { description: 'exclusive: the first instant of the next month' }) periodEnd!: Date;
  @Field(() => Date) updatedAt!: Date;
}

@ObjectType('AiCreditEntry', { description: 'One immutable ledger entry.' })
export class AiCreditEntryType {
  @Field(() => ID) id!: string;
  @Field(() => String, { description: '`allocation`, `top_up`, `usage` or `adjustment`' }) kind!: string;
  @Field(() => String, { nullable: true }) product!: string | null;
  @Field(() => Int, { description: 'credits as reported' }) credits!: number;
  @Field(() => Int, { description: 'signed effect on the balance (0 for byok usage)' }) balanceDelta!: number;
  @Field(() => String, { nullable: true, description: '`managed` or `byok` (usage only)' }) funding!: string | null;
  @Field(() => String) source!: string;
  @Field(() => String, { nullable: true }) description!: string | null;
  @Field(() => Int, { nullable: true }) balanceAfter!: number | null;
  @Field(() => String, { description: '`YYYY-MM`' }) period!: string;
  @Field(() => Date) createdAt!: Date;
}

@ObjectType('AiCreditUsagePage')
export class AiCreditUsagePageType {
  @Field(() => [AiCreditEntryType]) items!: AiCreditEntryType[];
  @Field(() => String, { nullable: true }) nextCursor!: string | null;
}

@ObjectType('AiCreditQuote')
export class AiCreditQuoteType {
  @Field(() => ID) id!: string;
  @Field(() => Int) credits!: number;
  @Field(() => String) currency!: string;
  @Field(() => Float, { description: 'price of one credit in minor units' }) unitPriceMinor!: number;
  @Field(() => Float, { description: 'total price in minor units (cents, kobo)' }) priceMinor!: number;
  @Field(() => Date) expiresAt!: Date;
  @Field(() => Date) createdAt!: Date;
}

@ObjectType('AiCreditCheckout')
export class AiCreditCheckoutType {
  @Field(() => ID) id!: string;
  @Field(() => ID) quoteId!: string;
  @Field(() => String) idempotencyKey!: string;
  @Field(() => String) provider!: string;
  @Field(() => String, { description: '`pending` until the provider confirms, then `paid`' }) status!: string;
  @Field(() => Int) credits!: number;
  @Field(() => String) currency!: string;
  @Field(() => Float) priceMinor!: number;
  @Field(() => String, { nullable: true }) paymentUrl!: string | null;
  @Field(() => ID, { nullable: true, description: 'the top-up ledger entry, once paid' }) entryId!: string | null;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
  @Field(() => Date, { nullable: true }) paidAt!: Date | null;
}

@ObjectType('AiCreditFundingPreference')
export class AiCreditFundingPreferenceType {
  @Field(() => String, { description: '`assets`, `agents` or `workflows`' }) product!: string;
  @Field(() => String, { description: '`managed` or `byok`' }) mode!: string;
  @Field(() => Date, { nullable: true }) updatedAt!: Date | null;
}

@ObjectType('AiCreditFunding')
export class AiCreditFundingType {
  @Field(() => [AiCreditFundingPreferenceType]) preferences!: AiCreditFundingPreferenceType[];
}
