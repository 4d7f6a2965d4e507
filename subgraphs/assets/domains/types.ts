import { Field, ID, ObjectType } from 'type-graphql';
import type { DomainDoc } from './model';
import { txtNameOf, txtValueOf } from './domains';

@ObjectType('AssetDomainVerification', { description: 'The DNS record that proves the domain.' })
export class DomainVerificationType {
  @Field(() => String, { description: '`TXT`' }) type!: string;
  @Field(() => String) name!: string;
  @Field(() => String) value!: string;
}

@ObjectType('AssetDomain', { description: 'A custom domain serving one bucket on the CDN.' })
export class DomainType {
  @Field(() => ID) id!: string;
  @Field(() => String) domain!: string;
  @Field(() => ID, { description: 'The bucket id.' }) bucket!: string;
  @Field(() => String, { description: '`pending` or `verified`' }) status!: string;
  @Field(() => DomainVerificationType) verification!: DomainVerificationType;
  @Field(() => Date, { nullable: true }) verifiedAt!: Date | null;
  @Field(() => Date, { nullable: true }) lastCheckedAt!: Date | null;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
}

export const toDomain = (d: DomainDoc): DomainType => ({
  id: d._id,
  domain: d.hostname,
  bucket: d.bucketId,
  status: d.status,
  verification: { type: 'TXT', name: txtNameOf(d.hostname), value: txtValueOf(d) },
  verifiedAt: d.verifiedAt ?? null,
  lastCheckedAt: d.lastCheckedAt ?? null,
  createdAt: d.createdAt,
  updatedAt: d.updatedAt,
});
