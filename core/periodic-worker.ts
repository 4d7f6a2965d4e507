import type { Logger } from './logger';

/** Something that runs in the background where workers run (sweepers, relays, schedulers). */
export interface BackgroundWorker {
  name: string;
  start(): Promise<void> | void;
  stop(): Promise<void> | void;
}

/**
 * A background pass run every `intervalMs` where workers run (sweepers, re-checks). Passes never
 * overlap: the next one is scheduled when the previous settles, so a slow pass (an engine that is
 * down, a DNS server that times out) delays the next instead of stacking them. A failed pass is
 * logged and retried on the next tick; it never becomes an unhandled rejection. `stop` waits for
 * the pass in progress.
 */
export function periodicWorker(name: string, intervalMs: number, log: Logger, pass: () => Promise<unknown>): BackgroundWorker {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = true;

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = pass()
        .then(
          () => undefined,
          (e: unknown) => log.warn({ worker: name, err: (e as Error).message }, 'background pass failed; retrying next tick'),
        )
        .finally(() => {
          running = undefined;
          schedule();
        });
    }, intervalMs);
    timer.unref();
  };

  return {
    name,
    start() {
      stopped = false;
      schedule();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
