import { randomUUID } from 'node:crypto';
import type { EventBus, Subscription } from '../core/events/event-bus';
import { TOPICS, topicName } from '../core/events/topics';
import type { Logger } from '../core/logger';
import type { OperationEvent as EngineOperationEvent } from '../core/operations/store';

/** An operation event as the relay delivers it: the engine's payload plus the outbox `eventId`. */
export type OperationEvent = EngineOperationEvent & { eventId?: string };

/** Events a slow subscriber may have queued before it is dropped. */
const MAX_QUEUED = 1000;

/**
 * Fans operation events out to live subscribers. Every router instance consumes with its own
 * consumer group, so each sees every event; ordering per project follows the Kafka partition.
 */
export class OperationFeed {
  private readonly listeners = new Map<string, Set<(e: OperationEvent) => void>>();
  private subscription?: Subscription;
  private readonly seen = new Set<string>();

  constructor(
    private readonly bus: EventBus,
    private readonly log: Logger,
    private readonly topic: string = topicName(TOPICS.operations),
  ) {}

  async start(): Promise<void> {
    const topic = this.topic;
    await this.bus.ensureTopics([topic]);
    this.subscription = await this.bus.subscribe<OperationEvent>({
      groupId: `router-feed-${randomUUID()}`,
      topics: [topic],
      fromBeginning: false,
      waitForAssignment: true,
      handler: async (m) => this.dispatch(m.value),
    });
  }

  async stop(): Promise<void> {
    await this.subscription?.stop();
  }

  private dispatch(e: OperationEvent): void {
    // At-least-once delivery: an event relayed twice is shown once.
    if (e.eventId) {
      if (this.seen.has(e.eventId)) return;
      if (this.seen.size > 50_000) this.seen.clear();
      this.seen.add(e.eventId);
    }
    for (const listener of this.listeners.get(e.projectId) ?? []) listener(e);
  }

  /** An async iterator of one project's operation events, ended by `return()`. */
  watch(projectId: string): AsyncIterableIterator<OperationEvent> {
    const queue: OperationEvent[] = [];
    let wake: (() => void) | undefined;
    let done = false;
    let overflow = false;
    const listener = (e: OperationEvent) => {
      if (queue.length >= MAX_QUEUED) {
        overflow = true;
      } else {
        queue.push(e);
      }
      wake?.();
    };
    const set = this.listeners.get(projectId) ?? new Set();
    set.add(listener);
    this.listeners.set(projectId, set);
    const cleanup = () => {
      done = true;
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(projectId);
      wake?.();
    };
    const log = this.log;
    return {
      [Symbol.asyncIterator]() {
        return this;
      },
      async next(): Promise<IteratorResult<OperationEvent>> {
        while (!done) {
          if (overflow) {
            log.warn({ projectId }, 'dropping a subscriber that fell too far behind');
            cleanup();
            throw new Error('subscriber fell too far behind; resubscribe');
          }
          const e = queue.shift();
          if (e) return { value: e, done: false };
          await new Promise<void>((r) => (wake = r));
          wake = undefined;
        }
        return { value: undefined, done: true };
      },
      async return(): Promise<IteratorResult<OperationEvent>> {
        cleanup();
        return { value: undefined, done: true };
      },
    };
  }
}
