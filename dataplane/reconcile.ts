/**
 * The data plane's one reconcile loop (docs/decisions/0155-site-reconcile.md): each area that runs
 * workloads on the plane (sites, commerce releases) registers a pass that reads its records and
 * brings the plane in line with them: a workload whose record says it should run is started and
 * routed, a route that changed (a verified custom domain) is re-applied. A pass runs when it is
 * registered (the platform's boot), again every `intervalMs`, and whenever an area asks for one
 * (`kick`); it must be safe to run any number of times. Passes of one area never overlap: a kick
 * during a pass runs one more pass after it.
 */

export type ReconcilePass = () => Promise<void>;

export interface ReconcileRegistry {
  /** Registers an area's pass and runs it now (in the background); answers the unregister function. */
  register(name: string, pass: ReconcilePass): () => void;
  /** Runs one area's pass again soon (after the one running, if any); resolves when it has run. */
  kick(name: string): Promise<void>;
  /** Runs every registered pass once; resolves when all have run (errors are logged, not thrown). */
  reconcile(): Promise<void>;
}

interface Entry {
  pass: ReconcilePass;
  running: Promise<void> | null;
  again: Promise<void> | null;
}

export interface ReconcilerOptions {
  /** Periodic pass interval in ms (default 30 s; 0: only at registration and on kicks). */
  intervalMs?: number;
  /** Where a failed pass is reported. */
  onError?: (name: string, err: Error) => void;
}

export class Reconciler implements ReconcileRegistry {
  private readonly entries = new Map<string, Entry>();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(private readonly o: ReconcilerOptions = {}) {
    const every = o.intervalMs ?? 30_000;
    if (every > 0) {
      this.timer = setInterval(() => void this.reconcile(), every);
      this.timer.unref();
    }
  }

  register(name: string, pass: ReconcilePass): () => void {
    const entry: Entry = { pass, running: null, again: null };
    this.entries.set(name, entry);
    void this.run(name, entry);
    return () => {
      if (this.entries.get(name) === entry) this.entries.delete(name);
    };
  }

  kick(name: string): Promise<void> {
    const entry = this.entries.get(name);
    return entry ? this.run(name, entry) : Promise.resolve();
  }

  async reconcile(): Promise<void> {
    await Promise.all([...this.entries].map(([name, e]) => this.run(name, e)));
  }

  /** Stops the timer and waits for passes in flight; no pass starts afterwards. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    const inFlight = [...this.entries.values()].flatMap((e) => [e.running, e.again].filter(Boolean) as Promise<void>[]);
    this.entries.clear();
    await Promise.allSettled(inFlight);
  }

  private run(name: string, e: Entry): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (e.running) {
      // One more pass after the current one; kicks while it waits share it.
      e.again ??= e.running.then(() => {
        e.again = null;
        return this.run(name, e);
      });
      return e.again;
    }
    e.running = e
      .pass()
      .catch((err: unknown) => this.o.onError?.(name, err as Error))
      .finally(() => {
        e.running = null;
      });
    return e.running;
  }
}
