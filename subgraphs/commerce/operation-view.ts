import type { OperationDoc } from '../../core/operations/model';

/**
 * Spec 3.2: commerce operations are `queued → running → succeeded | failed` with `error_code` and a
 * redacted `error_message`. The kernel engine's `pending`/`completed` are shown under these names;
 * an operation waiting to retry after a passing failure is `queued` with its last `error_code`.
 */
export const COMMERCE_OPERATION_TYPES = {
  connect: 'commerce.connect',
  verify: 'commerce.verify',
  release: 'commerce.release',
} as const;

export type CommerceOperationStatus = 'queued' | 'running' | 'succeeded' | 'failed';

export interface CommerceOperationView {
  id: string;
  projectId: string;
  type: string;
  status: CommerceOperationStatus;
  step: string;
  environment: string | null;
  releaseId: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

const STATUS: Record<OperationDoc['status'], CommerceOperationStatus> = {
  pending: 'queued',
  running: 'running',
  completed: 'succeeded',
  failed: 'failed',
};

export const isCommerceOperation = (op: OperationDoc) => op.operationType.startsWith('commerce.');

export function operationView(op: OperationDoc): CommerceOperationView {
  const input = (op.input ?? {}) as { environment?: string; releaseId?: string };
  return {
    id: op._id,
    projectId: op.projectId,
    type: op.operationType.replace(/^commerce\./, ''),
    status: STATUS[op.status],
    step: op.step,
    environment: input.environment ?? null,
    releaseId: input.releaseId ?? null,
    errorCode: op.errorCode ?? null,
    errorMessage: op.errorMessage ?? null,
    createdAt: op.createdAt,
    startedAt: op.startedAt ?? null,
    finishedAt: op.finishedAt ?? null,
  };
}
