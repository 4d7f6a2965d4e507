/**
 * Kafka probe: the broker that `infra up` started (or KAFKA_BROKERS names) delivers what the event
 * bus relies on — produce then consume in a consumer group, and at-least-once delivery: a message
 * consumed but not committed goes to the next consumer of the group once the first one dies, while
 * a committed one does not. Assumes the engines are up (`npm test` runs `infra up` first).
 */
import { randomUUID } from 'node:crypto';
import { type Consumer, type EachMessagePayload, Kafka, Partitioners, logLevel } from 'kafkajs';
import { config } from '../../core/config';

const run = randomUUID().slice(0, 8);
const kafka = new Kafka({
  clientId: `kafka-probe-${run}`,
  brokers: config().kafkaBrokers,
  logLevel: logLevel.NOTHING,
  retry: { retries: 8, initialRetryTime: 100 },
});
const admin = kafka.admin();
const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
const consumers: Consumer[] = [];

function newConsumer(groupId: string): Consumer {
  const c = kafka.consumer({ groupId, maxWaitTimeInMs: 100, retry: { retries: 8, initialRetryTime: 100 } });
  consumers.push(c);
  return c;
}

async function waitFor(what: string, cond: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function createTopic(topic: string, numPartitions: number): Promise<void> {
  await admin.createTopics({ topics: [{ topic, numPartitions, replicationFactor: 1 }], waitForLeaders: true });
}

beforeAll(async () => {
  await admin.connect();
  await producer.connect();
});

afterAll(async () => {
  await Promise.all(consumers.map((c) => c.disconnect().catch(() => undefined)));
  await producer.disconnect();
  await admin.disconnect();
});

describe('Kafka probe', () => {
  test('a consumer group receives what was produced, in order per key', async () => {
    const topic = `probe.roundtrip.${run}`;
    await createTopic(topic, 3);
    const sent = ['a', 'b', 'c'].flatMap((key) => [1, 2, 3].map((n) => ({ key, value: `${key}${n}` })));
    await producer.send({ topic, messages: sent });

    const got: { key: string; value: string; partition: number }[] = [];
    const consumer = newConsumer(`probe-roundtrip-${run}`);
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message, partition }: EachMessagePayload) => {
        got.push({ key: message.key!.toString(), value: message.value!.toString(), partition });
      },
    });
    await waitFor('all 9 messages', () => got.length >= sent.length);
    await consumer.disconnect();

    expect(got.map((m) => m.value).sort()).toEqual(sent.map((m) => m.value).sort());
    for (const key of ['a', 'b', 'c']) {
      const ofKey = got.filter((m) => m.key === key);
      expect(ofKey.map((m) => m.value)).toEqual([`${key}1`, `${key}2`, `${key}3`]);
      expect(new Set(ofKey.map((m) => m.partition)).size).toBe(1); // one key, one partition
    }
  });

  test('a message consumed but not committed is redelivered to the next consumer of the group', async () => {
    const topic = `probe.redelivery.${run}`;
    const groupId = `probe-redelivery-${run}`;
    await createTopic(topic, 1);

    // First consumer: commits "committed" explicitly, then sees "uncommitted" and dies without committing.
    const seenByFirst: string[] = [];
    const first = newConsumer(groupId);
    await first.connect();
    await first.subscribe({ topic, fromBeginning: true });
    await first.run({
      autoCommit: false,
      eachMessage: async ({ message, partition }: EachMessagePayload) => {
        const value = message.value!.toString();
        if (value === 'committed') {
          await first.commitOffsets([{ topic, partition, offset: (BigInt(message.offset) + 1n).toString() }]);
        }
        seenByFirst.push(value);
      },
    });
    await producer.send({ topic, messages: [{ value: 'committed' }] });
    await waitFor('the first consumer to commit "committed"', () => seenByFirst.includes('committed'));
    await producer.send({ topic, messages: [{ value: 'uncommitted' }] });
    await waitFor('the first consumer to see "uncommitted"', () => seenByFirst.includes('uncommitted'));
    await first.disconnect(); // dies: autoCommit is off and nothing committed "uncommitted"

    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
    expect(committed.partitions).toEqual([expect.objectContaining({ partition: 0, offset: '1' })]);

    // Second consumer of the same group, *not* from the beginning: only the committed offset decides.
    const seenBySecond: string[] = [];
    const second = newConsumer(groupId);
    await second.connect();
    await second.subscribe({ topic, fromBeginning: false });
    await second.run({
      eachMessage: async ({ message }: EachMessagePayload) => {
        seenBySecond.push(message.value!.toString());
      },
    });
    await waitFor('the second consumer to get "uncommitted" again', () => seenBySecond.includes('uncommitted'));
    await second.disconnect();

    expect(seenByFirst).toEqual(['committed', 'uncommitted']);
    expect(seenBySecond).toEqual(['uncommitted']);
  });
});
