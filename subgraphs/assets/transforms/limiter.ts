import pLimit from 'p-limit';

/**
 * Bounds the synchronous image transforms of one process (each decodes a whole image in memory):
 * at most `total` run at once, and at most `perAccount` of them for one account. An account's
 * excess waits in its own queue and only then enters the shared one, so a tenant asking for a
 * thousand derivatives holds `perAccount` slots and others' requests still reach the rest.
 * Decision: docs/decisions/0112-transform-concurrency.md.
 */
export class TransformLimiter {
  private readonly shared: pLimit.Limit;
  /** Per account: its queue and how many of its transforms are queued or running. */
  private readonly accounts = new Map<string, { limit: pLimit.Limit; count: number }>();

  constructor(
    readonly total: number,
    readonly perAccount: number,
  ) {
    this.shared = pLimit(total);
  }

  run<T>(accountId: string, fn: () => Promise<T>): Promise<T> {
    let own = this.accounts.get(accountId);
    if (!own) {
      own = { limit: pLimit(Math.min(this.perAccount, this.total)), count: 0 };
      this.accounts.set(accountId, own);
    }
    const entry = own;
    entry.count++;
    return entry
      .limit(() => this.shared(fn))
      .finally(() => {
        // An idle account's queue is dropped: the map holds only accounts with work.
        if (--entry.count === 0) this.accounts.delete(accountId);
      });
  }

  /** Transforms running now (shared slots in use) and waiting (in the shared or an account queue). */
  get load() {
    let waiting = this.shared.pendingCount;
    for (const a of this.accounts.values()) waiting += a.limit.pendingCount;
    return { running: this.shared.activeCount, waiting, accounts: this.accounts.size };
  }
}
