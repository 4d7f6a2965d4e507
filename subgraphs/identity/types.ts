import { Directive, Field, ID, ObjectType } from 'type-graphql';

@ObjectType('Account')
export class Account {
  @Field(() => ID) id!: string;
  @Field(() => String) slug!: string;
  @Field(() => String, { description: '`free` or `pro`' }) plan!: string;
}

@ObjectType('Project')
@Directive('@key(fields: "id")')
export class Project {
  @Field(() => ID) id!: string;
  @Field(() => String) name!: string;
  @Field(() => ID) accountId!: string;
  @Field(() => String, { nullable: true, description: 'What the project hosts, e.g. `publisher`' })
  sourceType!: string | null;
  @Field(() => Date) createdAt!: Date;
}

@ObjectType('Viewer')
export class Viewer {
  @Field(() => Account) account!: Account;
  @Field(() => String, { description: '`owner`, `member` or `read_only`' }) role!: string;
  @Field(() => [String]) scopes!: string[];
}
