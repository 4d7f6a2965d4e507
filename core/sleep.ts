/**
 * The platform's one sleep. Resolves after `ms`; when `signal` aborts, rejects at once with the
 * abort reason itself (so a step that sleeps through a lost lease fails with the engine's own
 * LeaseLostError). The abort listener goes when the sleep ends, so long step loops do not pile
 * listeners on one signal; the timer is unref'd, so a frozen step never keeps the process alive.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal as AbortSignal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    timer.unref();
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  const e = new Error(`aborted: ${String(reason ?? 'aborted')}`);
  e.name = 'AbortError';
  return e;
}
