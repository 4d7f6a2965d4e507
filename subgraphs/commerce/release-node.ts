import { isPlatformError } from '../../core/errors';
import type { ReleaseWork } from '../../dataplane/agent/wire';
import type { ReleaseRun } from '../../dataplane/releases';
import { bundleKind } from '../../dataplane/workerd';
import { HOSTED_NODE_ID } from '../../nodes/registry';
import type { NodeTasks } from '../../nodes/tasks';
import type { ArtifactStore } from './artifacts';
import { type CommerceCode, commerceError } from './errors';
import type { CommerceModels } from './model';
import { COMMERCE_OPERATION_TYPES } from './operation-view';
import { processEnv } from './runtime';

/**
 * A bundle release's side of the hosted node (docs/decisions/0325-nodes-module.md): its machine steps
 * go out as node tasks, and the node's agent reads a release's bundle and environment back here.
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
    throw e;
  }
}

/**
 * The release source of the hosted node (nodes/releases.ts): unpacks the release's artifact from the
 * blob store into `bundle` and answers how to run it, its environment's secrets opened here, in process.
 */
export async function prepareRelease(
  models: CommerceModels,
  artifacts: ArtifactStore,
  releaseId: string,
  bundle: string,
): Promise<ReleaseRun> {
  const r = await models.Release.findById(releaseId).lean();
  const connection = r ? await models.Connection.findById(r.projectId).lean() : null;
  if (!r?.artifact || !connection) throw new Error(`release ${releaseId} or its connection is gone`);
  await artifacts.unpack(r.artifact, bundle);
  const kind = bundleKind(bundle);
  if (kind !== connection.kind) {
    throw commerceError(
      'COMMERCE_CONFIG_MISMATCH',
      kind
        ? `the bundle is ${kind === 'app' ? 'an app' : 'a storefront'}, the connection ${connection.kind === 'app' ? 'an app' : 'a storefront'}`
        : 'the bundle holds neither index.js, dist/server/index.js nor server.mjs',
    );
  }
  return {
    releaseId: r._id,
    projectId: r.projectId,
    kind,
    env: processEnv(kind, connection.storeDomain, r.environmentPin ?? null),
    // The limit it was created with (a release made before `memory_mb` existed: the default).
    memoryMb: r.memoryMb ?? undefined,
  };
}
