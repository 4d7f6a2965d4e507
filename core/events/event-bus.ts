/**
 * The platform's event bus. Areas publish and consume through this interface only; the Kafka
 * implementation (`kafka-event-bus.ts`) is one of possibly several.
 */
export interface BusMessage<T = unknown> {
  topic: string;
  /** Partitioning key: messages with the same key keep their order. */
  key: string;
  /** Serialised as JSON. */
  value: T;
  headers?: Record<string, string>;
}

export interface ReceivedMessage<T = unknown> extends BusMessage<T> {
  partition: number;
  offset: string;
}

export interface Subscription {
  stop(): Promise<void>;
}

export interface SubscribeOptions<T> {
  groupId: string;
  topics: string[];
  fromBeginning?: boolean;
  /**
   * Called once per message, in order per partition. A throw is retried (up to `maxAttempts`)
   * unless it is a non-retriable `PlatformError`; then the message goes to `<topic>.dlq`.
   */
  handler: (m: ReceivedMessage<T>) => Promise<void>;
  /** Handler attempts per message before dead-lettering: 3. */
  maxAttempts?: number;
  /**
   * Resolve only once the consumer has joined its group and holds partitions, so a message
   * published after `subscribe` returns is seen even with `fromBeginning: false`.
   */
  waitForAssignment?: boolean;
}

export interface EventBus {
  /** Publishes in order (per key), waiting for all in-sync replicas. */
  publish(messages: BusMessage[]): Promise<void>;
  subscribe<T>(opts: SubscribeOptions<T>): Promise<Subscription>;
  ensureTopics(topics: string[]): Promise<void>;
  close(): Promise<void>;
  /** Messages not yet consumed by this bus's consumer groups, or by the broker's groups `groups` accepts (implementations that can tell). */
  consumerLag?(groups?: (groupId: string) => boolean): Promise<ConsumerLag[]>;
}

export interface ConsumerLag {
  groupId: string;
  topic: string;
  lag: number;
}
