import { isPlatformError } from '../errors';
import { childLogger } from '../logger';
import { redactMessage } from '../operations/redact';
import type { BusMessage, EventBus, ReceivedMessage, SubscribeOptions, Subscription } from './event-bus';
import { dlqTopic } from './topics';

/**
 * An in-process event bus for unit tests and single-process tools: one partition per topic, each
 * consumer group sees every message once, `fromBeginning` replays the topic's log.
 */
export function createMemoryEventBus(): EventBus & { log(topic: string): ReceivedMessage[] } {
  const logs = new Map<string, ReceivedMessage[]>();
  const subs = new Set<{ topics: Set<string>; deliver(m: ReceivedMessage): void }>();
  const log = childLogger('memory-bus');
  let closed = false;

  const topicLog = (t: string) => {
    let l = logs.get(t);
    if (!l) logs.set(t, (l = []));
    return l;
  };

  const bus = {
    log: (topic: string) => [...topicLog(topic)],
    async ensureTopics(topics: string[]) {
      for (const t of topics) topicLog(t);
    },
    async publish(messages: BusMessage[]) {
      if (closed) throw new Error('event bus is closed');
      for (const m of messages) {
        const l = topicLog(m.topic);
        // A JSON round trip, as a real broker would do.
        const value: unknown = JSON.parse(JSON.stringify(m.value ?? null));
        const r: ReceivedMessage = { ...m, value, headers: { ...m.headers }, partition: 0, offset: String(l.length) };
        l.push(r);
        for (const s of subs) if (s.topics.has(m.topic)) s.deliver(r);
      }
    },
    async subscribe<T>(opts: SubscribeOptions<T>): Promise<Subscription> {
      const maxAttempts = Math.max(1, opts.maxAttempts ?? 3);
      let chain = Promise.resolve();
      let stopped = false;
      const handle = async (m: ReceivedMessage<T>) => {
        for (let attempt = 1; ; attempt++) {
          try {
            await opts.handler(m);
            return;
          } catch (e) {
            const retriable = !isPlatformError(e) || e.retriable;
            if (!retriable || attempt >= maxAttempts) {
              log.error({ topic: m.topic, offset: m.offset, err: redactMessage(e) }, 'message dead-lettered');
              await bus.publish([
                {
                  topic: dlqTopic(m.topic),
                  key: m.key,
                  value: m.value,
                  headers: { ...m.headers, 'x-dlq-reason': redactMessage(e) },
                },
              ]);
              return;
            }
          }
        }
      };
      const sub = {
        topics: new Set(opts.topics),
        deliver: (m: ReceivedMessage) => {
          chain = chain.then(() => (stopped ? undefined : handle(m as ReceivedMessage<T>)));
        },
      };
      if (opts.fromBeginning) for (const t of opts.topics) for (const m of topicLog(t)) sub.deliver(m);
      subs.add(sub);
      return {
        // Delivers what was already published to it, then nothing more.
        stop: async () => {
          subs.delete(sub);
          await chain;
          stopped = true;
        },
      };
    },
    async close() {
      closed = true;
      subs.clear();
    },
  };
  return bus;
}
