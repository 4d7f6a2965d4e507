import { isPlatformError } from '../../core/errors';
import { BUNDLE_KIND_MISMATCH, type ReleaseDelivery, type ReleaseWork } from '../../dataplane/agent/wire';
import { HOSTED_NODE_ID } from '../../nodes/registry';
import type { NodeTasks } from '../../nodes/tasks';
import { type CommerceCode, commerceError } from './errors';
import type { CommerceModels } from './model';
import { COMMERCE_OPERATION_TYPES } from './operation-view';
import { processEnv } from './runtime';

/**
 * A bundle release's side of the hosted node (docs/decisions/0325-nodes-module.md): its machine steps
 * go out as node tasks, and the node's agent reads a release's bundle and environment back through
 * the agent API (decision 0365).
 */

export type ReleaseStep = 'release_start' | 'release_promote' | 'release_reconcile';

/**
 * Runs a release step as a task of the hosted node and answers its result; a failure with one of
 * commerce's codes (a bundle of the wrong kind) comes back as that error.
 */
export async function onHostedNode(
  tasks: NodeTasks,
  step: ReleaseStep,
  operationId: string,
  release: ReleaseWork,
  signal?: AbortSignal,
  attempt = 1,
): Promise<Record<string, unknown>> {
  try {
    const out = await tasks.run(
      {
        id: `${operationId}:${step}`,
        nodeId: HOSTED_NODE_ID,
        siteId: release.releases.length === 1 ? release.releases[0].releaseId : 'commerce',
        operationId,
        operationType: COMMERCE_OPERATION_TYPES.release,
        step,
        release,
        attempt,
      },
      signal,
    );
    return out ?? {};
  } catch (e) {
    if (isPlatformError(e) && e.code.startsWith('COMMERCE_')) throw commerceError(e.code as CommerceCode, e.message);
    // The node unpacked a bundle of another kind than the connection's.
    if (isPlatformError(e) && e.code === BUNDLE_KIND_MISMATCH) throw commerceError('COMMERCE_CONFIG_MISMATCH', e.message);
    throw e;
  }
}

/**
 * How a release runs, for the node's agent that holds its task (the agent API, nodes/releases.ts;
 * docs/decisions/0365-agent-fetches-extras-and-releases.md): its environment's secrets opened here
 * from their sealed pin, the kind of bundle its connection expects (the agent checks the unpacked
 * bundle against it: `BUNDLE_KIND_MISMATCH`, raised again here as COMMERCE_CONFIG_MISMATCH), its
 * memory, the gate's time and the commerce platform's address, and its artifact's SHA-256.
 */
export async function describeRelease(
  models: CommerceModels,
  releaseId: string,
  host: { gateMs?: number; commercePlatformUrl?: string },
): Promise<ReleaseDelivery> {
  const r = await models.Release.findById(releaseId).lean();
  const connection = r ? await models.Connection.findById(r.projectId).lean() : null;
  if (!r?.artifact || !connection) throw commerceError('COMMERCE_NOT_FOUND', `release ${releaseId} or its connection is gone`);
  return {
    run: {
      releaseId: r._id,
      projectId: r.projectId,
      kind: connection.kind,
      env: processEnv(connection.kind, connection.storeDomain, r.environmentPin ?? null),
      // The limit it was created with (a release made before `memory_mb` existed: the default).
      ...(r.memoryMb ? { memoryMb: r.memoryMb } : {}),
      ...(host.gateMs ? { gateMs: host.gateMs } : {}),
      ...(host.commercePlatformUrl ? { commercePlatformUrl: host.commercePlatformUrl } : {}),
    },
    sha256: r.artifact,
  };
}
