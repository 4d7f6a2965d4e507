import { sleep } from '../../core/sleep';
import { retriable, PlatformError } from '../../core/errors';

/** What a step passes besides the operation: the site it acts on and a progress line for its detail. */
export interface StepExtras {
  /** The site the step acts on (a staging copy's steps act on the copy, not the operation's resource). */
  siteId?: string;
  /** Records what the step is doing now as its `detail` (core/operations/engine.ts). */
  progress?: (detail: string) => void;
}

/** What a real capture step sealed (docs/decisions/0150-recovery-point-bytes.md). */
export interface CapturedPart {
  snapshotId: string;
  sizeBytes: number;
  sha256: string;
}

/** What a step may answer: a capture step its sealed part (the simulated one answers nothing). */
export interface StepOutput {
  captured?: CapturedPart;
}

/** The seam the site executors call per step: simulated (tests, fault drills) or real (the data plane). */
export interface Infrastructure {
  readonly kind: 'simulated' | 'real';
  perform(
    operationType: string,
    step: string,
    signal?: AbortSignal,
    op?: { _id: string; projectId: string; resourceId?: string; input?: unknown },
    idempotencyToken?: string,
    extras?: StepExtras,
  ): Promise<StepOutput | void>;
  /** A longer deadline for a step than the engine's default (a cold runtime install). */
  stepTimeoutMs?(step: string): number | undefined;
}

/** A failure a test (or an operator drill) asks the simulated infrastructure to produce. */
export interface InjectedFault {
  operationType: string;
  step: string;
  /** How many times the step fails before it works again (default 1). */
  times?: number;
  /** Retriable faults are retried by the operation engine; others fail the operation. */
  retriable?: boolean;
  code?: string;
  /** Only operations this accepts fail (e.g. one project's); default: any of the type. */
  match?: (op: { _id: string; projectId: string; input?: unknown }) => boolean;
}

type StoredFault = Required<Omit<InjectedFault, 'match'>> & Pick<InjectedFault, 'match'>;

/**
 * Stands in for the real infrastructure (containers, databases, volumes): every step takes a
 * configurable delay and can be made to fail. Behaves like the real thing from the outside.
 */
export class SimulatedInfrastructure implements Infrastructure {
  readonly kind = 'simulated' as const;
  private faults: StoredFault[] = [];
  /** Idempotency tokens seen, with how often each was presented (bounded by the test's lifetime). */
  readonly tokens = new Map<string, number>();
  constructor(public stepDelayMs: number) {}

  injectFailure(fault: InjectedFault): void {
    this.faults.push({ times: 1, retriable: false, code: 'infrastructure_failure', ...fault });
  }

  clearFaults(): void {
    this.faults = [];
  }

  async perform(
    operationType: string,
    step: string,
    signal?: AbortSignal,
    op?: { _id: string; projectId: string; input?: unknown },
    idempotencyToken?: string,
  ): Promise<void> {
    // A real provider deduplicates on the token (`<operation id>:<step id>`); the stand-in counts them.
    if (idempotencyToken) this.tokens.set(idempotencyToken, (this.tokens.get(idempotencyToken) ?? 0) + 1);
    await sleep(this.stepDelayMs, signal);
    const fault = this.faults.find(
      (f) =>
        f.operationType === operationType && f.step === step && f.times > 0 && (!f.match || (op !== undefined && f.match(op))),
    );
    if (fault) {
      fault.times -= 1;
      const message = `simulated failure in step ${step}`;
      throw fault.retriable ? retriable(fault.code, message) : new PlatformError(fault.code, 500, message);
    }
  }
}
