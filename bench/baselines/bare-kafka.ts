/**
 * The baseline of the event bus: a bare kafkajs producer (acks from all in-sync replicas, as the
 * bus publishes) and a consumer in its own group on a fresh topic, nothing else. `publishConsume`
 * measures either this or the platform's bus through the same two functions.
 */
import { Kafka, logLevel, Partitioners } from 'kafkajs';

export interface PubSub {
  publish(topic: string, key: string, value: unknown): Promise<void>;
  subscribe(topic: string, groupId: string, onMessage: (value: { i: number; at: number }) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export async function bareKafka(brokers: string[]): Promise<PubSub> {
  const kafka = new Kafka({ clientId: 'bench-bare', brokers, logLevel: logLevel.NOTHING });
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  const admin = kafka.admin();
  await admin.connect();
  return {
    async publish(topic, key, value) {
      await producer.send({ topic, acks: -1, messages: [{ key, value: JSON.stringify(value) }] });
    },
    async subscribe(topic, groupId, onMessage) {
      await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true });
      const consumer = kafka.consumer({ groupId });
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      let assigned: () => void = () => undefined;
      const ready = new Promise<void>((r) => (assigned = r));
      consumer.on(consumer.events.GROUP_JOIN, () => assigned());
      await consumer.run({
        eachMessage: async ({ message }) => onMessage(JSON.parse(message.value!.toString()) as { i: number; at: number }),
      });
      await ready;
      return () => consumer.disconnect();
    },
    async close() {
      await admin.disconnect();
      await producer.disconnect();
    },
  };
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** `n` messages, `inFlight` publishes at a time: messages per second (first publish → last receipt) and publish→receipt ms. */
export async function publishConsume(
  bus: PubSub,
  topic: string,
  n: number,
  inFlight: number,
): Promise<{ perSecond: number; p50: number; p99: number }> {
  const latencies: number[] = [];
  let done: () => void = () => undefined;
  const all = new Promise<void>((r) => (done = r));
  const stop = await bus.subscribe(topic, `${topic}.g`, (v) => {
    latencies.push(performance.now() - v.at);
    if (latencies.length === n) done();
  });
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < n) {
        const i = next++;
        await bus.publish(topic, `k${i % 16}`, { i, at: performance.now() });
      }
    }),
  );
  await Promise.race([all, new Promise((r) => setTimeout(r, 60_000))]);
  const seconds = (performance.now() - t0) / 1000;
  await stop();
  if (latencies.length < n) throw new Error(`${topic}: ${latencies.length} of ${n} messages arrived`);
  latencies.sort((a, b) => a - b);
  return { perSecond: n / seconds, p50: pct(latencies, 50), p99: pct(latencies, 99) };
}
