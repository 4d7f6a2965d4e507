import type { Admin } from 'kafkajs';
import { randomBytes } from 'node:crypto';
import { config } from '../../core/config';
import { createKafkaEventBus } from '../../core/events/kafka-event-bus';

/**
 * Concurrent first uses of a topic (consumers and publishers starting together) create it once: a
 * second CreateTopics for the same name is refused by the broker, and kafkajs logs that refusal as an
 * error on every start. Real broker.
 */
describe('ensureTopics', () => {
  it('asks the broker for each topic once when many calls want it at the same time', async () => {
    const bus = createKafkaEventBus({ brokers: config().kafkaBrokers, clientId: 'topics-test' });
    try {
      const admin = await (bus as unknown as { getAdmin(): Promise<Admin> }).getAdmin();
      const createTopics = jest.spyOn(admin, 'createTopics');
      const id = randomBytes(4).toString('hex');
      const [a, b] = [`ttopics.${id}.a`, `ttopics.${id}.b`];
      await Promise.all([bus.ensureTopics([a]), bus.ensureTopics([a, b]), bus.ensureTopics([b, a]), bus.ensureTopics([a])]);
      // Each name was asked for once: `a` by the first call, `b` by the second.
      const asked = createTopics.mock.calls.flatMap(([o]) => o.topics.map((t) => t.topic));
      expect(asked.sort()).toEqual([a, b]);
      expect(await admin.listTopics()).toEqual(expect.arrayContaining([a, b]));
      await bus.ensureTopics([a, b]);
      expect(createTopics).toHaveBeenCalledTimes(asked.length);
      await admin.deleteTopics({ topics: [a, b] }).catch(() => undefined);
    } finally {
      await bus.close();
    }
  });
});
