import type { OperationDoc } from '../../core/operations/model';
import type { CaptureDoc, CaptureStatus, RecoveryPointDoc, RecoveryPointStatus } from './model';

/** Points listed per request, newest first. */
export const RECOVERY_POINT_LIST_LIMIT = 100;

export interface CaptureView {
  status: CaptureStatus;
  snapshotId: string | null;
  sizeBytes: number | null;
  sha256: string | null;
  capturedAt: Date | null;
}

export interface RecoveryPointView {
  id: string;
  projectId: string;
  kind: string;
  reason: string | null;
  status: RecoveryPointStatus;
  runtimeVersion: string;
  runtimeDigest: string;
  runtimeImage: string;
  database: CaptureView;
  content: CaptureView;
  release: CaptureView;
  operationId: string;
  errorCode: string | null;
  createdAt: Date;
  completedAt: Date | null;
}

const capture = (c: CaptureDoc): CaptureView => ({
  status: c.status,
  snapshotId: c.snapshotId ?? null,
  sizeBytes: c.sizeBytes ?? null,
  sha256: c.sha256 ?? null,
  capturedAt: c.capturedAt ?? null,
});

/**
 * The point as users see it. A point still `pending` whose operation already ended failed (e.g.
 * abandoned after its workers died) is reported `incomplete`: it will never be completed.
 */
export function recoveryPointView(doc: RecoveryPointDoc, op?: OperationDoc | null): RecoveryPointView {
  const abandoned = doc.status === 'pending' && op?.status === 'failed';
  return {
    id: doc._id,
    projectId: doc.projectId,
    kind: doc.kind,
    reason: doc.reason ?? null,
    status: abandoned ? 'incomplete' : doc.status,
    runtimeVersion: doc.runtimeVersion,
    runtimeDigest: doc.runtimeDigest,
    runtimeImage: doc.runtimeImage,
    database: capture(doc.database),
    content: capture(doc.content),
    release: capture(doc.release),
    operationId: doc.operationId,
    errorCode: doc.errorCode ?? (abandoned ? (op?.errorCode ?? 'operation_failed') : null),
    createdAt: doc.createdAt,
    completedAt: doc.completedAt ?? null,
  };
}

/** Views of many points, reading the operations of those still pending (one query). */
export async function recoveryPointViews(
  getOps: (ids: string[]) => Promise<OperationDoc[]>,
  docs: RecoveryPointDoc[],
): Promise<RecoveryPointView[]> {
  const pending = docs.filter((d) => d.status === 'pending').map((d) => d.operationId);
  const ops = pending.length ? new Map((await getOps(pending)).map((o) => [o._id, o])) : new Map<string, OperationDoc>();
  return docs.map((d) => recoveryPointView(d, ops.get(d.operationId)));
}
