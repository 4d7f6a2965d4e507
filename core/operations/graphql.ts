import { Directive, Field, ID, Int, ObjectType } from 'type-graphql';
import { GraphQLJSON } from 'graphql-scalars';
import type { OperationDoc } from './model';

/**
 * The GraphQL face of a durable operation, the same in every area that runs operations: a
 * `@shareable` value type, so a second area adding it changes nothing in composition. The REST
 * bridge selects it with the kernel fragment `OperationFields` (`fragments.graphql` beside this).
 */

@ObjectType('OperationStep')
@Directive('@shareable')
export class OperationStepType {
  @Field(() => String) id!: string;
  @Field(() => String) status!: string;
  @Field(() => Date, { nullable: true }) startedAt!: Date | null;
  @Field(() => Date, { nullable: true }) finishedAt!: Date | null;
  @Field(() => Int) attempts!: number;
  @Field(() => String, {
    nullable: true,
    description: 'What the running step is doing now (such as an install progress line), or why it failed; never a secret.',
  })
  detail!: string | null;
}

@ObjectType('Operation', { description: 'A durable asynchronous lifecycle operation.' })
@Directive('@shareable')
export class OperationType {
  @Field(() => ID) id!: string;
  @Field(() => ID) projectId!: string;
  @Field(() => String) resourceType!: string;
  @Field(() => ID) resourceId!: string;
  @Field(() => String) operationType!: string;
  @Field(() => String, { description: '`pending`, `running`, `completed` or `failed`' }) status!: string;
  @Field(() => String) step!: string;
  @Field(() => [OperationStepType]) steps!: OperationStepType[];
  @Field(() => Int) attempt!: number;
  @Field(() => Int) maxAttempts!: number;
  @Field(() => String, { nullable: true }) errorCode!: string | null;
  @Field(() => String, { nullable: true, description: 'Redacted: never holds a secret.' }) errorMessage!: string | null;
  @Field(() => GraphQLJSON, { nullable: true }) result!: unknown;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
  @Field(() => Date, { nullable: true }) startedAt!: Date | null;
  @Field(() => Date, { nullable: true }) finishedAt!: Date | null;
}

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
    detail: s.detail ?? null,
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
