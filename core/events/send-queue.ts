/**
 * One produce request at a time, carrying every publish that arrived while the previous one was
 * on the wire (decision 0210). The bus's producer keeps a single request in flight so that
 * kafkajs's own retries cannot reorder a partition; without this queue, N concurrent publishes
 * were N requests waiting their turn behind each other. Requests still go out strictly one after
 * another and in arrival order, so per-partition order is what it was; each caller's promise
 * settles with the request its messages went in (a failed request rejects every caller in it).
 */
export class SendQueue<T> {
  private readonly waiting: Array<{ items: T[]; resolve: () => void; reject: (e: unknown) => void }> = [];
  private sending = false;

  /** `send` writes one request; `maxItems` bounds the messages in it (a larger single publish goes alone). */
  constructor(
    private readonly send: (items: T[]) => Promise<void>,
    private readonly maxItems = 1000,
  ) {}

  submit(items: T[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ items, resolve, reject });
      if (!this.sending) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.sending = true;
    try {
      while (this.waiting.length > 0) {
        const batch = [this.waiting.shift()!];
        let count = batch[0].items.length;
        while (this.waiting.length > 0 && count + this.waiting[0].items.length <= this.maxItems) {
          const next = this.waiting.shift()!;
          batch.push(next);
          count += next.items.length;
        }
        try {
          await this.send(batch.flatMap((b) => b.items));
          for (const b of batch) b.resolve();
        } catch (e) {
          for (const b of batch) b.reject(e);
        }
      }
    } finally {
      this.sending = false;
    }
  }
}
