import { createHash } from 'node:crypto';

/**
 * A UUID fixed by `seed`: the ids of operations and approvals a run creates are derived from the
 * run and its segment, so a step or a decision performed again (after a crash, a lost lease or a
 * retried request) finds the same record instead of making a second one (engine enqueue and the
 * approval insert are idempotent on the id).
 */
export function derivedId(seed: string): string {
  const h = createHash('sha256').update(seed).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export const runOperationId = (runId: string, segment: number) => derivedId(`assets.workflow_run:${runId}:${segment}`);
export const stepApprovalId = (runId: string, segment: number, stepId: string) =>
  derivedId(`assets.workflow_approval:${runId}:${segment}:${stepId}`);
export const actionOperationId = (approvalId: string) => derivedId(`assets.automation_action:${approvalId}`);

/** The hash a decision may offer: binds it to exactly this approval and what it allows. */
export function approvalHash(parts: unknown[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}
