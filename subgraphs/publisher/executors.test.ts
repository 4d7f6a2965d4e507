import { badRequest, retriable } from '../../core/errors';
import { LeaseLostError, WorkerShutdownError } from '../../core/operations/engine';
import type { OperationDoc } from '../../core/operations/model';
import { isFinalFailure } from './executors';

const ctx = (attempt: number, maxAttempts = 3, aborted = false) => {
  const controller = new AbortController();
  if (aborted) controller.abort();
  return { op: { attempt, maxAttempts } as OperationDoc, signal: controller.signal };
};

describe('isFinalFailure (when a capture marks its point incomplete, an upgrade rolls back)', () => {
  it('treats non-retriable errors as final at once', () => {
    expect(isFinalFailure(ctx(1), badRequest('x', 'x'))).toBe(true);
  });

  it('treats retriable errors (and unknown ones) as final only on the last attempt', () => {
    expect(isFinalFailure(ctx(1), retriable('x', 'x'))).toBe(false);
    expect(isFinalFailure(ctx(2), new Error('boom'))).toBe(false);
    expect(isFinalFailure(ctx(3), retriable('x', 'x'))).toBe(true);
  });

  it('never treats a lost lease, a shutdown or an aborted run as final: another worker resumes', () => {
    expect(isFinalFailure(ctx(3), new LeaseLostError('op'))).toBe(false);
    expect(isFinalFailure(ctx(3), new WorkerShutdownError())).toBe(false);
    expect(isFinalFailure(ctx(3, 3, true), badRequest('x', 'x'))).toBe(false);
  });
});
