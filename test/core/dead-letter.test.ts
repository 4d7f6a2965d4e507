import { randomBytes } from 'node:crypto';
import { badRequest } from '../../core/errors';
import { createKafkaEventBus } from '../../core/events/kafka-event-bus';
import { dlqTopic } from '../../core/events/topics';
import { config } from '../../core/config';

/** docs/areas/spine.md point 13: a failed dead-letter publish does not commit the offset (real Kafka). */
it('a message whose dead-letter publish fails is redelivered and dead-lettered, never skipped', async () => {
  const bus = createKafkaEventBus({ brokers: config().kafkaBrokers, clientId: 'dlq-test' });
  const topic = `t_dlq_${randomBytes(4).toString('hex')}.events`;
  let dlqFailures = 1;
  const realPublish = bus.publish.bind(bus);
  const dlqWrites: string[] = [];
  bus.publish = async (messages) => {
    if (messages.some((m) => m.topic === dlqTopic(topic))) {
      if (dlqFailures-- > 0) throw new Error('broker unavailable');
      dlqWrites.push(...messages.map((m) => String(m.value)));
    }
    return realPublish(messages);
  };
  let handled = 0;
  const sub = await bus.subscribe({
    groupId: `g_${randomBytes(4).toString('hex')}`,
    topics: [topic],
    fromBeginning: true,
    waitForAssignment: true,
    maxAttempts: 1,
    handler: async () => {
      handled++;
      throw badRequest('poison', 'cannot handle this message');
    },
  });
  try {
    await realPublish([{ topic, key: 'k', value: { n: 1 } }]);
    const until = Date.now() + 45_000;
    while (dlqWrites.length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    expect(dlqWrites).toHaveLength(1);
    expect(handled).toBeGreaterThanOrEqual(2);
  } finally {
    await sub.stop();
    await bus.close();
  }
}, 60_000);
