import { Field, Int, ObjectType } from 'type-graphql';

/** GraphQL types of the mail area; the REST bridge keeps their camelCase names (spec 1.6). */

@ObjectType('MailDnsRecord', { description: 'One DNS record the audit looked at.' })
export class MailDnsRecordType {
  @Field(() => String, { description: '`spf`, `dmarc`, `mx`, `dkim` or `return_path`' }) kind!: string;
  @Field(() => String) name!: string;
  @Field(() => String, { description: '`found`, `missing`, `multiple`, `unknown` or `pending`' }) status!: string;
  @Field(() => [String]) observed!: string[];
  @Field(() => String) explanation!: string;
}

@ObjectType('MailSpfAnalysis')
export class MailSpfAnalysisType {
  @Field(() => String, { description: '`safe_merge`, `manual_review` or `unknown`' }) status!: string;
  @Field(() => Int, { description: 'DNS-querying terms counted as RFC 7208 §4.6.4 does' }) lookupCount!: number;
  @Field(() => [String]) reasons!: string[];
  @Field(() => String, { nullable: true, description: 'The one SPF record to publish; only when safe_merge' }) proposed!:
    string | null;
}

@ObjectType('MailAudit', { description: 'The public domain audit.' })
export class MailAuditType {
  @Field(() => String) domain!: string;
  @Field(() => Date) checkedAt!: Date;
  @Field(() => [MailDnsRecordType]) records!: MailDnsRecordType[];
  @Field(() => MailSpfAnalysisType) spf!: MailSpfAnalysisType;
  @Field(() => String) disclaimer!: string;
  @Field(() => String, { nullable: true, description: 'File name when the caller asked for a download' }) downloadName!:
    string | null;
}

@ObjectType('MailMigrationGuide')
export class MailMigrationGuideType {
  @Field(() => String) provider!: string;
  @Field(() => String) name!: string;
  @Field(() => String) authentication!: string;
  @Field(() => String) sender!: string;
  @Field(() => String) apiChange!: string;
  @Field(() => String) webhookChange!: string;
  @Field(() => String) dnsChange!: string;
  @Field(() => String) source!: string;
  @Field(() => Date) verifiedAt!: Date;
}

@ObjectType('MailMigrationStep')
export class MailMigrationStepType {
  @Field(() => String) id!: string;
  @Field(() => String) title!: string;
  @Field(() => String) action!: string;
}

@ObjectType('MailMigrationPlan', { description: 'The audit plus the provider guide and the steps.' })
export class MailMigrationPlanType extends MailAuditType {
  @Field(() => MailMigrationGuideType) guide!: MailMigrationGuideType;
  @Field(() => [MailMigrationStepType]) steps!: MailMigrationStepType[];
  @Field(() => [String]) rollback!: string[];
  @Field(() => String) example!: string;
  @Field(() => String) sdkExample!: string;
  @Field(() => String) contactMigration!: string;
}

@ObjectType('MailMigrationChecklist')
export class MailChecklistType {
  @Field(() => String) domain!: string;
  @Field(() => String) provider!: string;
  @Field(() => [String]) completed!: string[];
  @Field(() => Int) revision!: number;
  @Field(() => Date, { nullable: true }) updatedAt!: Date | null;
}
