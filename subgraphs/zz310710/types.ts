import { IsOptional, IsString, MaxLength } from 'class-validator';
import { ArgsType, Field, ID, ObjectType } from 'type-graphql';
import { MAX_NOTE_LENGTH } from './limits';

@ObjectType('Zz310710Status')
export class Zz310710StatusType {
  @Field(() => String) area!: string;
  @Field(() => ID) accountId!: string;
  @Field(() => String, { nullable: true }) note!: string | null;
}

@ArgsType()
export class Zz310710StatusArgs {
  @Field(() => String, { nullable: true }) @IsOptional() @IsString() @MaxLength(MAX_NOTE_LENGTH) note?: string | null;
}
