import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { config } from '../../core/config';
import { createKafkaEventBus } from '../../core/events/kafka-event-bus';

/**
 * A first start is quiet (core/events/kafka-log.ts): brand-new consumer groups join a brand-new
 * topic on the real broker, receive a message, and nothing is logged at error level on the way.
 * Pointed at a brand-new broker (`KAFKA_BROKERS=…`, docs/decisions/0300) this is the first start,
 * where the group coordinator is not available yet for about a second.
 */
it('brand-new consumer groups join and consume without an error-level line', async () => {
  const lines: Array<{ level: number; msg: string; error?: string }> = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const run = randomBytes(4).toString('hex');
  const bus = createKafkaEventBus({ brokers: config().kafkaBrokers, clientId: `settling-${run}`, log });
  const topic = `t_settling_${run}.events`;
  const received = new Set<string>();
  const groups = [1, 2, 3].map((i) => `g_settling_${run}_${i}`);
  try {
    const subs = await Promise.all(
      groups.map((groupId) =>
        bus.subscribe({
          groupId,
          topics: [topic],
          fromBeginning: true,
          waitForAssignment: true,
          handler: async () => void received.add(groupId),
        }),
      ),
    );
    await bus.publish([{ topic, key: 'k', value: { n: 1 } }]);
    const until = Date.now() + 30_000;
    while (received.size < groups.length && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    await Promise.all(subs.map((s) => s.stop()));
    expect([...received].sort()).toEqual(groups);
  } finally {
    await bus.close();
  }
  expect(lines.filter((l) => l.level >= 50).map((l) => `${l.msg} ${l.error ?? ''}`)).toEqual([]);
});
