import { sleep } from '../sleep';
import { Kafka, Partitioners, logLevel, type Admin, type Consumer, type IHeaders, type Producer } from 'kafkajs';
import type { Message } from 'kafkajs';
import { config } from '../config';
import { isPlatformError } from '../errors';
import { childLogger, type Logger } from '../logger';
import { redactMessage } from '../operations/redact';
import type { BusMessage, ConsumerLag, EventBus, ReceivedMessage, SubscribeOptions, Subscription } from './event-bus';
import { kafkaLogCreator } from './kafka-log';
import { untilSettled } from './kafka-settling';
import { dlqTopic } from './topics';
import { SendQueue } from './send-queue';
import { consumeInContext, countConsumed, startProducerSpans } from '../telemetry/kafka';

export interface KafkaEventBusOptions {
  brokers?: string[];
  clientId?: string;
  /** Partitions of topics this bus creates: 3 (order is per key, so any count keeps it). */
  numPartitions?: number;
  /**
   * An idempotent producer (acks=all, sequence numbers per partition: a batch the client retries
   * after a leader change is written once). Default: on for a cluster (more than one broker, or
   * KAFKA_IDEMPOTENT=true), off for the single local broker, whose path stays as it was.
   */
  idempotent?: boolean;
  /** Where the bus and kafkajs log (kafkajs's lines through `kafkaLogCreator`): the `kafka` child logger by default. */
  log?: Logger;
}

/** Handler attempts per message before dead-lettering. */
const DEFAULT_HANDLER_ATTEMPTS = 3;
/** First pause between handler attempts, doubled each time, in milliseconds. */
const HANDLER_RETRY_BASE_MS = 100;

function headersToStrings(h: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h ?? {})) {
    if (v === undefined) continue;
    out[k] = Array.isArray(v) ? v.map((x) => x.toString()).join(',') : v.toString();
  }
  return out;
}

/** Writing a message's dead-letter copy failed; its offset stays uncommitted. */
export class DeadLetterPublishError extends Error {
  constructor(reason: string) {
    super(`dead-letter publish failed: ${reason}`);
    this.name = 'DeadLetterPublishError';
  }
}

class KafkaEventBus implements EventBus {
  private readonly kafka: Kafka;
  private readonly log: Logger;
  private readonly numPartitions: number;
  private readonly idempotent: boolean;
  private producer: Promise<Producer> | undefined;
  private admin: Promise<Admin> | undefined;
  private readonly knownTopics = new Set<string>();
  /** Topics being created by a call in flight, and that call. */
  private readonly creating = new Map<string, Promise<void>>();
  private readonly consumers = new Set<Consumer>();
  /** Group and topics of each running consumer, for the consumer-lag figures. */
  private readonly groups = new Map<Consumer, { groupId: string; topics: string[] }>();
  private closed = false;
  /** Concurrent publishes share the one produce request in flight (send-queue.ts). */
  private readonly sends = new SendQueue<{ topic: string; message: Message }>(async (items) => {
    const byTopic = new Map<string, Message[]>();
    for (const { topic, message } of items) {
      if (!byTopic.has(topic)) byTopic.set(topic, []);
      byTopic.get(topic)!.push(message);
    }
    try {
      const producer = await this.getProducer();
      await producer.sendBatch({ acks: -1, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) });
    } catch (e) {
      await this.resetProducer();
      throw e;
    }
  });

  constructor(opts: KafkaEventBusOptions) {
    this.log = opts.log ?? childLogger('kafka');
    this.numPartitions = opts.numPartitions ?? 3;
    const brokers = opts.brokers ?? config().kafkaBrokers;
    this.idempotent = opts.idempotent ?? (brokers.length > 1 || process.env.KAFKA_IDEMPOTENT === 'true');
    this.kafka = new Kafka({
      clientId: opts.clientId ?? 'platform',
      brokers,
      connectionTimeout: 3000,
      logLevel: logLevel.WARN,
      logCreator: kafkaLogCreator(this.log),
      // A publish that cannot reach the broker fails within a few seconds; the outbox retries it.
      retry: { initialRetryTime: 100, maxRetryTime: 2000, retries: 4 },
    });
  }

  private getProducer(): Promise<Producer> {
    this.producer ??= (async () => {
      const p = this.kafka.producer({
        createPartitioner: Partitioners.DefaultPartitioner,
        allowAutoTopicCreation: true,
        idempotent: this.idempotent,
        // One request in flight keeps per-partition order across kafkajs's own retries.
        maxInFlightRequests: 1,
      });
      await p.connect();
      return p;
    })();
    return this.producer;
  }

  private getAdmin(): Promise<Admin> {
    this.admin ??= (async () => {
      const a = this.kafka.admin();
      await a.connect();
      return a;
    })();
    return this.admin;
  }

  /** After a failure the client is rebuilt on next use, so a broker that comes back is picked up. */
  private async resetProducer(): Promise<void> {
    const p = this.producer;
    this.producer = undefined;
    if (p) await p.then((x) => x.disconnect()).catch(() => undefined);
  }

  private async resetAdmin(): Promise<void> {
    const a = this.admin;
    this.admin = undefined;
    if (a) await a.then((x) => x.disconnect()).catch(() => undefined);
  }

  async ensureTopics(topics: string[]): Promise<void> {
    const missing = [...new Set(topics)].filter((t) => !this.knownTopics.has(t));
    if (missing.length === 0) return;
    // A topic another call is already creating is awaited, not asked for again: the broker refuses a
    // second CreateTopics for the same name, and kafkajs logs that refusal as an error.
    const mine = missing.filter((t) => !this.creating.has(t));
    if (mine.length > 0) {
      const created = this.createTopics(mine);
      for (const t of mine) this.creating.set(t, created);
      void created
        .catch(() => undefined)
        .finally(() => {
          for (const t of mine) if (this.creating.get(t) === created) this.creating.delete(t);
        });
    }
    await Promise.all(missing.map((t) => this.creating.get(t)));
  }

  private async createTopics(topics: string[]): Promise<void> {
    try {
      // A fresh broker answers "no leader yet" for a while after a create: wait, don't fail the start.
      // A topic asked for in an earlier attempt is not asked for again (its create went through, its
      // leaders did not answer yet; a second create is refused, and kafkajs logs that as an error)
      // even when the broker's topic list does not show it yet: its leaders are waited for instead.
      const asked = new Set<string>();
      await untilSettled(async () => {
        const admin = await this.getAdmin();
        const existing = new Set(await admin.listTopics());
        const earlier = topics.filter((t) => asked.has(t));
        const toCreate = topics.filter((t) => !existing.has(t) && !asked.has(t));
        for (const t of toCreate) asked.add(t);
        if (toCreate.length > 0) {
          await admin.createTopics({
            topics: toCreate.map((topic) => ({ topic, numPartitions: this.numPartitions })),
            waitForLeaders: true,
          });
        }
        if (earlier.length > 0) await admin.fetchTopicMetadata({ topics: earlier });
      });
    } catch (e) {
      await this.resetAdmin();
      throw e;
    }
    for (const t of topics) this.knownTopics.add(t);
  }

  async publish(messages: BusMessage[]): Promise<void> {
    if (messages.length === 0) return;
    if (this.closed) throw new Error('event bus is closed');
    const traced = startProducerSpans(messages);
    const byTopic = new Map<string, BusMessage[]>();
    for (const m of messages.map((msg, i) => ({ ...msg, headers: traced.headers[i] }))) {
      const list = byTopic.get(m.topic) ?? [];
      list.push(m);
      byTopic.set(m.topic, list);
    }
    try {
      await this.ensureTopics([...byTopic.keys()]);
    } catch (e) {
      traced.end(e);
      throw e;
    }
    try {
      await this.sends.submit(
        [...byTopic].flatMap(([topic, list]) =>
          list.map((m) => ({ topic, message: { key: m.key, value: JSON.stringify(m.value), headers: m.headers } })),
        ),
      );
      traced.end();
    } catch (e) {
      traced.end(e);
      throw e;
    }
  }

  async subscribe<T>(opts: SubscribeOptions<T>): Promise<Subscription> {
    if (this.closed) throw new Error('event bus is closed');
    await this.ensureTopics(opts.topics);
    await this.awaitCoordinator(opts.groupId);
    const maxAttempts = Math.max(1, opts.maxAttempts ?? DEFAULT_HANDLER_ATTEMPTS);
    const log = this.log.child({ groupId: opts.groupId });
    const consumer = this.kafka.consumer({
      groupId: opts.groupId,
      sessionTimeout: 10_000,
      heartbeatInterval: 1000,
      // Idle fetches return after this long, so stop() is quick: 500 ms.
      maxWaitTimeInMs: 500,
    });
    this.consumers.add(consumer);
    this.groups.set(consumer, { groupId: opts.groupId, topics: opts.topics });
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: opts.topics, fromBeginning: opts.fromBeginning ?? false });
      const joined = opts.waitForAssignment ? waitForGroupJoin(consumer) : undefined;
      await consumer.run({
        eachMessage: async ({ topic, partition, message, heartbeat }) => {
          const headers = headersToStrings(message.headers);
          const raw = message.value?.toString() ?? 'null';
          const base = {
            topic,
            partition,
            offset: message.offset,
            key: message.key?.toString() ?? '',
            headers,
          };
          let value: T;
          try {
            value = JSON.parse(raw) as T;
          } catch (e) {
            await this.deadLetter(log, { ...base, value: raw }, opts.groupId, e);
            return;
          }
          const received: ReceivedMessage<T> = { ...base, value };
          // The handler continues the producer's trace (W3C traceparent in the headers).
          await consumeInContext(topic, opts.groupId, headers, async () => {
            for (let attempt = 1; ; attempt++) {
              try {
                await opts.handler(received);
                countConsumed('ok');
                return;
              } catch (e) {
                const retriable = !isPlatformError(e) || e.retriable;
                if (!retriable || attempt >= maxAttempts) {
                  await this.deadLetter(log, received, opts.groupId, e);
                  countConsumed('dead_lettered');
                  return;
                }
                log.warn(
                  { topic, partition, offset: message.offset, attempt, err: redactMessage(e) },
                  'handler failed, retrying',
                );
                await sleep(HANDLER_RETRY_BASE_MS * 2 ** (attempt - 1));
                await heartbeat().catch(() => undefined);
              }
            }
          });
        },
      });
      await joined;
    } catch (e) {
      this.consumers.delete(consumer);
      this.groups.delete(consumer);
      await consumer.disconnect().catch(() => undefined);
      throw e;
    }
    let stopped = false;
    return {
      stop: async () => {
        if (stopped) return;
        stopped = true;
        this.consumers.delete(consumer);
        this.groups.delete(consumer);
        await consumer.disconnect();
      },
    };
  }

  /**
   * Waits until the broker names a coordinator for `groupId`. A fresh broker creates its offsets
   * topic for the first group, and a consumer that joins before it is ready can crash for good
   * (kafkajs does not restart one that found no coordinator); asking first keeps it from joining early.
   */
  private async awaitCoordinator(groupId: string): Promise<void> {
    try {
      await untilSettled(async () => {
        await (await this.getAdmin()).describeGroups([groupId]);
      });
    } catch (e) {
      await this.resetAdmin();
      throw e;
    }
  }

  /** A message no handler attempt could process: kept on `<topic>.dlq`, then the consumer moves on. */
  private async deadLetter(log: Logger, m: ReceivedMessage<unknown>, groupId: string, err: unknown): Promise<void> {
    const reason = redactMessage(err);
    log.error({ topic: m.topic, partition: m.partition, offset: m.offset, err: reason }, 'message dead-lettered');
    try {
      await this.publish([
        {
          topic: dlqTopic(m.topic),
          key: m.key,
          value: m.value,
          headers: {
            ...m.headers,
            'x-dlq-reason': reason,
            'x-dlq-code': isPlatformError(err) ? err.code : 'handler_error',
            'x-dlq-group': groupId,
            'x-dlq-partition': String(m.partition),
            'x-dlq-offset': m.offset,
          },
        },
      ]);
    } catch (e) {
      // The offset is not committed: the consumer restarts from this message and dead-letters it
      // again, so a message is never lost because its dead-letter copy could not be written.
      log.error(
        { topic: m.topic, offset: m.offset, err: redactMessage(e) },
        'dead-letter publish failed; the message will be redelivered',
      );
      throw new DeadLetterPublishError(redactMessage(e));
    }
  }

  /**
   * Messages not yet consumed, per group and topic: this process's consumer groups, or with
   * `groups`, every group on the broker it accepts (the `platform status` view).
   */
  async consumerLag(groups?: (groupId: string) => boolean): Promise<ConsumerLag[]> {
    const admin = await this.getAdmin();
    const targets: Array<{ groupId: string; topics?: string[] }> = groups
      ? (await admin.listGroups()).groups.filter((g) => groups(g.groupId)).map((g) => ({ groupId: g.groupId }))
      : [...new Map([...this.groups.values()].map((g) => [g.groupId, g])).values()];
    const ends = new Map<string, Promise<Array<{ partition: number; high: string }>>>();
    const out: ConsumerLag[] = [];
    for (const { groupId, topics } of targets) {
      for (const committed of await admin.fetchOffsets({ groupId, topics })) {
        if (!ends.has(committed.topic)) ends.set(committed.topic, admin.fetchTopicOffsets(committed.topic));
        const done = new Map(committed.partitions.map((p) => [p.partition, Number(p.offset)]));
        // A partition with no committed offset yet (-1) counts as caught up: the group starts at its end.
        const lag = (await ends.get(committed.topic)!).reduce((sum, p) => {
          const at = done.get(p.partition) ?? -1;
          return sum + (at < 0 ? 0 : Math.max(0, Number(p.high) - at));
        }, 0);
        out.push({ groupId, topic: committed.topic, lag });
      }
    }
    return out;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const consumers = [...this.consumers];
    this.consumers.clear();
    await Promise.all(consumers.map((c) => c.disconnect().catch(() => undefined)));
    await this.resetProducer();
    await this.resetAdmin();
  }
}

/** The Kafka implementation of the event bus (kafkajs stays behind the interface). */
export function createKafkaEventBus(opts: KafkaEventBusOptions = {}): EventBus {
  return new KafkaEventBus(opts);
}

/** Group joins take a few seconds on a fresh group; give up after 30 s. */
const GROUP_JOIN_TIMEOUT_MS = 30_000;

function waitForGroupJoin(consumer: Consumer): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      remove();
      reject(new Error('consumer did not join its group in time'));
    }, GROUP_JOIN_TIMEOUT_MS);
    const remove = consumer.on(consumer.events.GROUP_JOIN, () => {
      clearTimeout(timer);
      remove();
      resolve();
    });
  });
}
