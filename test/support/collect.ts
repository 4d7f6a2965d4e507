import type { EventBus, ReceivedMessage } from '../../core/events/event-bus';
import { newId } from '../../core/ids';

/** Collects what a topic receives, for tests: a unique consumer group reading from the beginning. */
export interface Collector<T> {
  readonly messages: ReceivedMessage<T>[];
  /** Resolves with the collected messages once `pred` holds for them; rejects after `timeoutMs`. */
  waitFor(pred: (messages: ReceivedMessage<T>[]) => boolean, timeoutMs?: number): Promise<ReceivedMessage<T>[]>;
  stop(): Promise<void>;
}

export async function collect<T = Record<string, unknown>>(bus: EventBus, topics: string[]): Promise<Collector<T>> {
  const messages: ReceivedMessage<T>[] = [];
  const sub = await bus.subscribe<T>({
    groupId: `collector-${newId()}`,
    topics,
    fromBeginning: true,
    handler: async (m) => {
      messages.push(m);
    },
  });
  return {
    messages,
    async waitFor(pred, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (!pred(messages)) {
        if (Date.now() > deadline)
          throw new Error(`timed out waiting for messages on ${topics.join(',')} (have ${messages.length})`);
        await new Promise((r) => setTimeout(r, 25));
      }
      return messages;
    },
    stop: () => sub.stop(),
  };
}
