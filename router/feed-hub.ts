import { randomUUID } from 'node:crypto';
import { tracer } from '../core/telemetry/tracing';
import type { FeedDefinition } from '../core/area';
import type { EventBus, Subscription } from '../core/events/event-bus';
import type { Logger } from '../core/logger';

/** Event ids the hub remembers to drop re-deliveries; the least recently seen are forgotten first. */
export const FEED_DEDUP_MAX = 50_000;
/** Events a slow subscriber may have queued before it is dropped. */
const MAX_QUEUED = 1000;

type AnyFeed = FeedDefinition<unknown, Record<string, unknown>>;
type Event = unknown;

const defaultEventId = (e: unknown): string | undefined => {
  const v = e as { eventId?: unknown; event_id?: unknown };
  const id = v?.eventId ?? v?.event_id;
  return typeof id === 'string' ? id : undefined;
};

/**
 * The consumer group of a router instance that should resume after a restart: named by
 * `ROUTER_INSTANCE_ID` when set, else by host and port (stable for a container or a fixed port). A
 * router on a random port (port 0) has no stable identity and starts fresh each time.
 */
export function feedGroupId(topicPrefix: string, instanceId: string | undefined, host: string, port: number): string | undefined {
  if (instanceId) return `${topicPrefix}.router-feed.${instanceId}`;
  return port > 0 ? `${topicPrefix}.router-feed.${host}-${port}` : undefined;
}

/**
 * Fans the areas' Kafka events out to live graphql-ws subscribers, one consumer per topic. Every
 * router instance consumes with its own consumer group, so each sees every event; ordering per key
 * follows the Kafka partition. A feed is declared by its area (`feeds` in its definition).
 */
export class FeedHub {
  /** `<field>\u0000<key>` → listeners */
  private readonly listeners = new Map<string, Set<(e: Event) => void>>();
  private readonly subscriptions: Subscription[] = [];
  /** Topics this hub has joined (a retried start joins only the rest). */
  private readonly joined = new Set<string>();
  private stopped = false;
  /** Bounded LRU of `<field>\u0000<event id>` (Map order = recency). */
  private readonly seen = new Map<string, true>();

  constructor(
    private readonly bus: EventBus,
    private readonly log: Logger,
    private readonly feeds: readonly AnyFeed[],
    private readonly topicPrefix: string,
    /**
     * This router instance's consumer group. Stable across restarts (see `feedGroupId`), a
     * restarted router resumes from its committed position and still delivers what was published
     * while it was down; absent, a fresh group per start (tests, routers on random ports).
     */
    private readonly groupId?: string,
  ) {}

  async start(): Promise<void> {
    const byTopic = new Map<string, AnyFeed[]>();
    for (const feed of this.feeds) {
      const topic = `${this.topicPrefix}.${feed.topic}`;
      byTopic.set(topic, [...(byTopic.get(topic) ?? []), feed]);
    }
    const missing = [...byTopic.keys()].filter((t) => !this.joined.has(t));
    if (missing.length === 0) return;
    await this.bus.ensureTopics(missing);
    for (const topic of missing) {
      const feeds = byTopic.get(topic)!;
      if (this.stopped) return;
      this.subscriptions.push(
        await this.bus.subscribe<Event>({
          groupId: this.groupId ? `${this.groupId}.${topic}` : `router-feed-${randomUUID()}`,
          topics: [topic],
          fromBeginning: false,
          waitForAssignment: true,
          handler: async (m) => {
            for (const feed of feeds) this.dispatch(feed, m.value);
          },
        }),
      );
      this.joined.add(topic);
    }
  }

  /**
   * Joins the feeds' topics without holding up the router: when Kafka is unreachable the router
   * serves queries and mutations at once, and the feed keeps trying (backoff from `retryMs` up to
   * 30 s) until it has joined or the hub is stopped. Resolves when joined, or after `waitMs` with
   * the join still going on in the background.
   */
  startInBackground(opts: { waitMs: number; retryMs?: number }): Promise<void> {
    const joined = (async () => {
      let delay = opts.retryMs ?? 1_000;
      while (!this.stopped) {
        try {
          await this.start();
          return;
        } catch (err) {
          this.log.warn({ err, retryInMs: delay }, 'feed hub could not join Kafka; retrying');
          await new Promise((r) => setTimeout(r, delay).unref());
          delay = Math.min(delay * 2, 30_000);
        }
      }
    })();
    return Promise.race([joined, new Promise<void>((r) => setTimeout(r, opts.waitMs).unref())]);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.subscriptions.map((s) => s.stop()));
  }

  private dispatch(feed: AnyFeed, e: Event): void {
    // At-least-once delivery: an event relayed twice is shown once.
    const id = (feed.eventId ?? defaultEventId)(e);
    if (id) {
      const seenKey = `${feed.field}\u0000${id}`;
      if (this.seen.has(seenKey)) {
        this.seen.delete(seenKey);
        this.seen.set(seenKey, true);
        return;
      }
      this.seen.set(seenKey, true);
      // Forget only the oldest: clearing everything would let a just-seen event through again.
      if (this.seen.size > FEED_DEDUP_MAX) this.seen.delete(this.seen.keys().next().value as string);
    }
    const key = feed.keyOfEvent(e);
    if (key === null) return;
    let listeners: Set<(e: Event) => void> | undefined;
    if (typeof key === 'string') {
      listeners = this.listeners.get(`${feed.field}\u0000${key}`);
    } else {
      // Several keys: a subscriber listening on more than one of them still gets the event once.
      for (const k of key) {
        const some = this.listeners.get(`${feed.field}\u0000${k}`);
        if (!some?.size) continue;
        listeners = listeners ? new Set([...listeners, ...some]) : some;
      }
    }
    if (!listeners?.size) return;
    // The hand-off to live subscribers, in the trace of the consumed message (and so of its request).
    const span = tracer().startSpan(`subscription ${feed.field}`, { attributes: { 'platform.subscribers': listeners.size } });
    for (const listener of listeners) listener(e);
    span.end();
  }

  /** An async iterator of one feed's events for one key (or any of several), ended by `return()`. */
  watch(field: string, key: string | readonly string[]): AsyncIterableIterator<Event> {
    const listenerKeys = [...new Set(typeof key === 'string' ? [key] : key)].map((k) => `${field}\u0000${k}`);
    const queue: Event[] = [];
    let wake: (() => void) | undefined;
    let done = false;
    let overflow = false;
    const listener = (e: Event) => {
      if (queue.length >= MAX_QUEUED) {
        overflow = true;
      } else {
        queue.push(e);
      }
      wake?.();
    };
    for (const listenerKey of listenerKeys) {
      const set = this.listeners.get(listenerKey) ?? new Set();
      set.add(listener);
      this.listeners.set(listenerKey, set);
    }
    const cleanup = () => {
      done = true;
      for (const listenerKey of listenerKeys) {
        const set = this.listeners.get(listenerKey);
        set?.delete(listener);
        if (set?.size === 0) this.listeners.delete(listenerKey);
      }
      wake?.();
    };
    const log = this.log;
    return {
      [Symbol.asyncIterator]() {
        return this;
      },
      async next(): Promise<IteratorResult<Event>> {
        while (!done) {
          if (overflow) {
            log.warn({ field, key }, 'dropping a subscriber that fell too far behind');
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
      async return(): Promise<IteratorResult<Event>> {
        cleanup();
        return { value: undefined, done: true };
      },
    };
  }
}
