import { conflict, isPlatformError, notFound } from '../../../core/errors';
import type { Principal } from '../../../core/principal';
import type { AiJobs, AiJobDoc } from '../ai';
import type { BulkJobDoc, BulkJobs } from '../bulk';
import type { Migrations, MigrationDoc } from '../migrations';
import type { JobDoc } from '../records';
import type { AssetsService } from '../storage';
import type { RunDoc, WorkflowService } from '../workflows';

/** Every kind of job id the Assets area hands out (`job_id` in a 202 answer). */
export type FoundJob =
  | { kind: 'delete'; doc: JobDoc }
  | { kind: 'bulk'; doc: BulkJobDoc }
  | { kind: 'ai'; doc: AiJobDoc }
  | { kind: 'migration'; doc: MigrationDoc }
  | { kind: 'workflow_run'; doc: RunDoc };

export type JobKind = FoundJob['kind'];

/** The services that own the job records (the area's services, as resolvers receive them). */
export interface JobSources {
  assets: AssetsService;
  bulk: BulkJobs;
  aiJobs: AiJobs;
  migrations: Migrations;
  workflows: WorkflowService;
}

const jobNotFound = () => notFound('assets.job_not_found', 'job not found');

/**
 * One job route over every kind (spec 4.3 `GET /jobs/{jobID}`, `POST /jobs/{jobID}/cancel`).
 * Each kind stays in its own collection and service; this only finds which one holds an id (ids are
 * random UUIDs, unique across kinds) and hands reads and cancels to that kind's own rules, so the
 * answer at `/jobs/{id}` and at the kind's route are the same record with the same checks.
 */
export class AssetJobs {
  constructor(private readonly s: JobSources) {}

  async get(p: Principal | null, id: string): Promise<FoundJob> {
    this.s.assets.reader(p);
    // Each owner answers with its own 404 for an id it does not hold (or another account's).
    const absent = (e: unknown) => {
      if (isPlatformError(e) && e.status === 404) return null;
      throw e;
    };
    const [del, bulk, ai, migration, run] = await Promise.all([
      this.s.assets.getJob(p, id).catch(absent),
      this.s.bulk.get(p, id).catch(absent),
      this.s.aiJobs.get(p, id).catch(absent),
      this.s.migrations.get(p, id).catch(absent),
      this.s.workflows.getRun(p, id).catch(absent),
    ]);
    if (del) return { kind: 'delete', doc: del };
    if (bulk) return { kind: 'bulk', doc: bulk };
    if (ai) return { kind: 'ai', doc: ai };
    if (migration) return { kind: 'migration', doc: migration };
    if (run) return { kind: 'workflow_run', doc: run };
    throw jobNotFound();
  }

  /**
   * Cancels where the kind supports it, by that kind's own rule: a queued delete job, a queued or
   * running migration, an unfinished workflow run. Bulk and AI jobs cannot be cancelled (409
   * `assets.job_not_cancellable`, as for a delete job that already runs).
   */
  async cancel(p: Principal | null, id: string): Promise<FoundJob> {
    this.s.assets.writer(p);
    const job = await this.get(p, id);
    switch (job.kind) {
      case 'delete':
        return { kind: 'delete', doc: await this.s.assets.cancelJob(p, id) };
      case 'migration':
        return { kind: 'migration', doc: await this.s.migrations.cancel(p, id) };
      case 'workflow_run':
        return { kind: 'workflow_run', doc: await this.s.workflows.cancelRun(p, id) };
      default:
        throw conflict('assets.job_not_cancellable', `a ${job.kind} job cannot be cancelled`, {
          kind: job.kind,
          status: job.doc.status,
        });
    }
  }
}
