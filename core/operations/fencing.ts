import type { Model, UpdateQuery } from 'mongoose';
import { PlatformError } from '../errors';
import { LeaseLostError } from './engine';
import type { OperationDoc } from './model';

/**
 * Fenced side effects. An operation's claim carries a lease token that grows with every claim
 * (`lease.token`); the engine's own writes are conditional on it, but a worker whose lease was
 * taken over could still write the resource the operation acts on. So the resource carries the
 * token too, in `fence` (`<operation id>:<lease token>`):
 *
 * - `takeResourceFence` stamps the resource with the caller's token at the start of its attempt
 *   (only the operation holding the resource's lock may, and never over a newer token);
 * - `fencedUpdate` makes each side-effect write conditional on that exact stamp, and fails the
 *   step (LeaseLostError via `FencedOutError`) when nothing matched: a newer worker took over.
 *
 * Both filters are `{_id, fence}`: declare a unique index on exactly those keys on the resource's
 * collection so the MongoDB-wire server does not scan (decision 0001).
 */
export type FencedOp = Pick<OperationDoc, '_id'> & { lease: Pick<OperationDoc['lease'], 'token'> };

export const fenceOf = (op: FencedOp): string => `${op._id}:${op.lease.token}`;

/** A newer attempt of the operation holds the resource: this worker's work is void (as a lost lease). */
export class FencedOutError extends LeaseLostError {
  constructor(resourceId: string, operationId: string) {
    super(operationId);
    this.message = `operation ${operationId}: a newer attempt holds ${resourceId}; this write was refused`;
    this.name = 'FencedOutError';
  }
}

/** The resource's lock is held by another operation (or none): this operation may not change it. */
export const lockNotHeld = (resourceId: string, operationId: string) =>
  new PlatformError('resource_lock_not_held', 409, `operation ${operationId} does not hold the lock of ${resourceId}`, {
    resourceId,
    operationId,
  });

interface FencedResource {
  _id: string;
  fence?: string | null;
}

/**
 * Stamps `resourceId` with the caller's fence. `lockField` names the resource's lock (the operation
 * id that must hold it); a resource another operation holds, or whose fence is newer, refuses.
 */
export async function takeResourceFence<T extends FencedResource>(
  model: Model<T>,
  resourceId: string,
  op: FencedOp,
  lockField: keyof T & string = 'activeOperationId' as keyof T & string,
): Promise<void> {
  const mine = fenceOf(op);
  for (let tries = 0; tries < 5; tries++) {
    const doc = (await model.findById(resourceId).lean()) as (FencedResource & Record<string, unknown>) | null;
    if (!doc) throw new PlatformError('resource_not_found', 404, `resource ${resourceId} no longer exists`);
    if (doc[lockField] !== op._id) throw lockNotHeld(resourceId, op._id);
    const current = doc.fence ?? null;
    if (current === mine) return;
    if (current) {
      const [curOp, curToken] = current.split(':');
      if (curOp === op._id && Number(curToken) > op.lease.token) throw new FencedOutError(resourceId, op._id);
    }
    const r = await model.updateOne({ _id: resourceId, fence: current } as never, { $set: { fence: mine } } as never);
    if (r.matchedCount === 1) return;
  }
  throw new FencedOutError(resourceId, op._id);
}

/** A side-effect write of the resource, conditional on the caller's fence; throws when a newer attempt holds it. */
export async function fencedUpdate<T extends FencedResource>(
  model: Model<T>,
  resourceId: string,
  op: FencedOp,
  update: UpdateQuery<T>,
): Promise<void> {
  const r = await model.updateOne({ _id: resourceId, fence: fenceOf(op) } as never, update as never);
  if (r.matchedCount !== 1) throw new FencedOutError(resourceId, op._id);
}
