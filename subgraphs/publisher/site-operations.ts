import type { EnqueueInput, OperationEngine } from '../../core/operations/engine';
import type { Principal } from '../../core/principal';

/**
 * Enqueues a site operation of the project; `siteId` is the site it acts on (a staging copy's
 * operation belongs to its source project but acts on the copy).
 */
export function enqueueSiteOperation(
  engine: OperationEngine,
  p: Principal,
  projectId: string,
  operationType: string,
  id: string,
  input: object,
  siteId = projectId,
  opts: Pick<EnqueueInput, 'idIsNew'> = {},
) {
  return engine.enqueue({
    id,
    ...opts,
    accountId: p.accountId,
    projectId,
    resourceType: 'site',
    resourceId: siteId,
    operationType,
    input,
    initiator: { type: 'api_key', id: p.keyId },
  });
}
